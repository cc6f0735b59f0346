# Utility, forgetting and membership inference of the original and every unlearned model.


rule evaluate:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=SPINE_CODE,
        models=models_of,
        cost=cost_of,
    output:
        "results/{exp}/{method}.json",
    wildcard_constraints:
        exp="spine",
    params:
        cfg=lambda wc: experiment_config(config, wc.exp)["eval"],
    log:
        "logs/evaluate/{exp}/{method}.log",
    benchmark:
        "logs/benchmarks/evaluate/{exp}/{method}.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} evaluate --exp {wildcards.exp} --method {wildcards.method} --features {input.features} "
        "--split {input.split} --models {input.models} --cost {input.cost} --out {output} > {log} 2>&1"
