# Common ground (issue 16; experiments/common_ground/): the methods of every paper on one task and one budget, with
# an empirical audit of each certificate. The centralized setting on the convex model and on an MLP, on the SGLU
# features of common.centralized.dataset; the decentralized client and sample settings, one job per (setting, seed),
# on the standardised pixels of common.decentralized.dataset (each missing, with the reason, where its data is not on
# disk).


rule common_centralized:
    input:
        features=f"data/sglu/{COMMON_DATASET}.safetensors",
        code=code("unlearning.experiments.common_ground.centralized"),
    output:
        result="results/common_ground/centralized.json",
        timing="timings/common_ground/centralized.json",
    params:
        cfg=COMMON_PARAMS,
    log:
        "logs/common_ground/centralized.log",
    benchmark:
        "logs/benchmarks/common_ground/centralized.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} common-centralized --features {input.features} --out {output.result} "
        "--timing {output.timing} > {log} 2>&1"


rule common_mlp:
    input:
        features=f"data/sglu/{COMMON_DATASET}.safetensors",
        code=code("unlearning.experiments.common_ground.mlp"),
    output:
        result="results/common_ground/centralized_mlp.json",
        timing="timings/common_ground/centralized_mlp.json",
    params:
        cfg={**COMMON_PARAMS, "mlp": COMMON["mlp"]},
    log:
        "logs/common_ground/centralized_mlp.log",
    benchmark:
        "logs/benchmarks/common_ground/centralized_mlp.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} common-mlp --features {input.features} --out {output.result} "
        "--timing {output.timing} > {log} 2>&1"


rule common_decentralized:
    input:
        features=f"data/features/{COMMON_DEC['dataset']}.safetensors",
        code=code("unlearning.experiments.common_ground.decentralized"),
        outside=COMMON_DEC_OUTSIDE,
    output:
        result="results/common_ground/{setting}_s{seed}.json",
        timing="timings/common_ground/{setting}_s{seed}.json",
        scores="results/common_ground/{setting}_s{seed}_rmia_scores.safetensors",
    wildcard_constraints:
        setting="client|sample",
        seed=r"\d+",
    params:
        cfg=COMMON_DEC_PARAMS,
    log:
        "logs/common_ground/{setting}_s{seed}.log",
    benchmark:
        "logs/benchmarks/common_ground/{setting}_s{seed}.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
    shell:
        "{PY} --threads {threads} common-decentralized --setting {wildcards.setting} --seed {wildcards.seed} "
        "--features {input.features} --out {output.result} --timing {output.timing} --scores {output.scores} "
        "> {log} 2>&1"


rule common_references:
    input:
        features=f"data/features/{COMMON_DEC['dataset']}.safetensors",
        code=code("unlearning.experiments.common_ground.decentralized"),
    output:
        result="results/common_ground/references_{setting}_s{seed}.json",
    wildcard_constraints:
        setting="client",
        seed=r"\d+",
    params:
        cfg=COMMON_REF_PARAMS,
    log:
        "logs/common_ground/references_{setting}_s{seed}.log",
    benchmark:
        "logs/benchmarks/common_ground/references_{setting}_s{seed}.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
    shell:
        "{PY} --threads {threads} common-references --setting {wildcards.setting} --seed {wildcards.seed} "
        "--features {input.features} --out {output.result} > {log} 2>&1"


rule common_ground_report:
    input:
        code=code("unlearning.experiments.common_ground.report"),
        centralized=[] if COMMON_MISSING else "results/common_ground/centralized.json",
        timing=[] if COMMON_MISSING else "timings/common_ground/centralized.json",
        mlp=[] if COMMON_MISSING else "results/common_ground/centralized_mlp.json",
        mlp_timing=[] if COMMON_MISSING else "timings/common_ground/centralized_mlp.json",
        decentralized=common_decentralized_results(),
        decentralized_timings=common_decentralized_timings(),
        rmia_scores=common_decentralized_scores(),
        references=COMMON_REFERENCES,
    output:
        md="reports/common_ground/index.md",
        html=report("reports/common_ground/index.html", caption="../report/common_ground_index.rst",
                    category="Reports"),
        tables=[f"reports/common_ground/{t}.csv" for t in ("centralized", "centralized_mlp", "client", "sample",
                                                           "originals", "r2d_calibration")],
        timing="reports/common_ground/timing.csv",
        summary="reports/common_ground/summary.json",
        figure=report("reports/common_ground/utility_cost.png", caption="../report/common_ground_figure.rst",
                      category="Common ground"),
    params:
        runs=common_ground_report_args(),
    log:
        "logs/common_ground/report.log",
    benchmark:
        "logs/benchmarks/common_ground/report.tsv"
    shell:
        "{PY} common-report {params.runs} --out-dir reports/common_ground > {log} 2>&1"
