# Common ground (issue 16; experiments/common_ground/): the methods of every paper on one task and one budget, with
# an empirical audit of each certificate. Built so far: the centralized setting on the convex model, on the SGLU
# features of common.centralized.dataset (missing, with the reason, where those features cannot be made).


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


rule common_ground_report:
    input:
        code=code("unlearning.experiments.common_ground.report"),
        centralized=[] if COMMON_MISSING else "results/common_ground/centralized.json",
        timing=[] if COMMON_MISSING else "timings/common_ground/centralized.json",
    output:
        md="reports/common_ground/index.md",
        html=report("reports/common_ground/index.html", caption="../report/common_ground_index.rst",
                    category="Reports"),
        table="reports/common_ground/centralized.csv",
        timing="reports/common_ground/timing.csv",
    params:
        runs=common_ground_report_args(),
    log:
        "logs/common_ground/report.log",
    benchmark:
        "logs/benchmarks/common_ground/report.tsv"
    shell:
        "{PY} common-report {params.runs} --out-dir reports/common_ground > {log} 2>&1"
