# Decentralized training of the original models, storing gradient histories and checkpoints.


rule pretrain:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=SPINE_CODE,
    output:
        models="artifacts/{exp}/pretrain/models.safetensors",
        cost="artifacts/{exp}/pretrain/cost.json",
        class_curve="artifacts/{exp}/pretrain/class_curve.json",
        history=directory("artifacts/{exp}/pretrain/history"),
        checkpoints=directory("artifacts/{exp}/pretrain/checkpoints"),
        timing="timings/{exp}/original.json",
    params:
        cfg=lambda wc: training_params(wc.exp),
        engine=config["engine"],
        device=config["device"],
    log:
        "logs/pretrain/{exp}.log",
    benchmark:
        "logs/benchmarks/pretrain/{exp}.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
        runtime=120,
    shell:
        "{PY} --threads {threads} pretrain --exp {wildcards.exp} --features {input.features} --split {input.split} "
        "--out artifacts/{wildcards.exp}/pretrain --timing {output.timing} > {log} 2>&1"
