# Raw dataset -> processed uint8 tensors; processed labels -> partition over clients + forget request.


rule prepare_dataset:
    input:
        code=lambda wc: with_code(SPINE_CODE, plugin_code(DATASETS, [wc.dataset])),
    output:
        "data/processed/{dataset}.safetensors",
    params:
        seed=config["seed"],
    log:
        "logs/prepare/{dataset}.log",
    benchmark:
        "logs/benchmarks/prepare/{dataset}.tsv"
    threads: THREADS
    shell:
        "{PY} --threads {threads} prepare --dataset {wildcards.dataset} --out {output} > {log} 2>&1"


rule split:
    input:
        features=lambda wc: features_path(wc.exp),
        code=SPINE_CODE,
    output:
        "data/splits/{exp}.safetensors",
    params:
        cfg=lambda wc: {k: experiment_config(config, wc.exp)[k] for k in ("clients", "partition", "forget")},
    log:
        "logs/split/{exp}.log",
    benchmark:
        "logs/benchmarks/split/{exp}.tsv"
    threads: THREADS
    shell:
        "{PY} --threads {threads} split --exp {wildcards.exp} --features {input.features} --out {output} > {log} 2>&1"
