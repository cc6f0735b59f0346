# Each unlearning method, from the trained state and the forget request.


rule unlearn:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=lambda wc: with_code(SPINE_CODE, plugin_code(METHODS, [wc.method])),
        models="artifacts/{exp}/pretrain/models.safetensors",
        checkpoints="artifacts/{exp}/pretrain/checkpoints",
        history="artifacts/{exp}/pretrain/history",
    output:
        models="artifacts/{exp}/unlearn/{method}/models.safetensors",
        cost="artifacts/{exp}/unlearn/{method}/cost.json",
        timing="timings/{exp}/{method}.json",
    wildcard_constraints:
        method="|".join(spine_methods()),
    params:
        cfg=lambda wc: experiment_config(config, wc.exp).get(wc.method, {}),
    log:
        "logs/unlearn/{exp}/{method}.log",
    benchmark:
        "logs/benchmarks/unlearn/{exp}/{method}.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
        runtime=120,
    shell:
        "{PY} --threads {threads} unlearn --exp {wildcards.exp} --method {wildcards.method} --features {input.features} "
        "--split {input.split} --pretrain-dir artifacts/{wildcards.exp}/pretrain "
        "--out artifacts/{wildcards.exp}/unlearn/{wildcards.method} --timing {output.timing} > {log} 2>&1"
