# SGLU (specs/sglu.md): binary features per dataset, the data-free accounting (Table 3, Figures 3b/3d, the
# baselines' sigmas) for every dataset, Figures 3a and 3c for the datasets on disk, and the report. A column served
# by a subset of the paper's data (the MNIST subset) keeps the paper's n for Table 3 and runs on its own accounting.


rule sglu_features:
    input:
        processed=sglu_processed,
        code=SGLU_CODE,
    output:
        "data/sglu/{dataset}.safetensors",
    params:
        cfg=lambda wc: sglu_feature_params(wc.dataset),
    log:
        "logs/sglu/{dataset}/features.log",
    benchmark:
        "logs/benchmarks/sglu/{dataset}/features.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} sglu-features --dataset {wildcards.dataset} --processed {input.processed} --out {output} > {log} 2>&1"


rule sglu_accounting:
    input:
        features=lambda wc: sglu_accounting_features(wc.dataset),
        code=SGLU_CODE,
    output:
        "results/sglu/{dataset}/accounting.json",
    params:
        cfg=SGLU_ACCOUNTING_PARAMS,
        features=lambda wc: sglu_features_option(wc.dataset),
    log:
        "logs/sglu/{dataset}/accounting.log",
    benchmark:
        "logs/benchmarks/sglu/{dataset}/accounting.tsv"
    threads: 1
    shell:
        "{PY} --threads {threads} sglu-accounting --dataset {wildcards.dataset} {params.features} --out {output} > {log} 2>&1"


rule sglu_subset_accounting:
    input:
        features="data/sglu/{dataset}.safetensors",
        code=SGLU_CODE,
    output:
        "results/sglu/{dataset}/accounting_subset.json",
    params:
        cfg=SGLU_ACCOUNTING_PARAMS,
    log:
        "logs/sglu/{dataset}/accounting_subset.log",
    benchmark:
        "logs/benchmarks/sglu/{dataset}/accounting_subset.tsv"
    threads: 1
    shell:
        "{PY} --threads {threads} sglu-accounting --dataset {wildcards.dataset} --features {input.features} "
        "--out {output} > {log} 2>&1"


rule sglu_run:
    input:
        features="data/sglu/{dataset}.safetensors",
        accounting=sglu_run_accounting,
        code=SGLU_CODE,
    output:
        result="results/sglu/{dataset}/{figure}.json",
        timing="timings/sglu/{dataset}/{figure}.json",
    wildcard_constraints:
        figure="fig3a|fig3c",
    params:
        cfg=lambda wc: sglu_run_params(wc.figure),
    log:
        "logs/sglu/{dataset}/{figure}.log",
    benchmark:
        "logs/benchmarks/sglu/{dataset}/{figure}.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} sglu-{wildcards.figure} --dataset {wildcards.dataset} --features {input.features} "
        "--accounting {input.accounting} --out {output.result} --timing {output.timing} > {log} 2>&1"


rule sglu_report:
    input:
        code=code("unlearning.experiments.sglu.report"),
        accounting=[f"results/sglu/{d}/accounting.json" for d in SGLU["datasets"]],
        fig3a=[f"results/sglu/{d}/fig3a.json" for d in SGLU_TRAINED],
        fig3c=[f"results/sglu/{d}/fig3c.json" for d in SGLU_TRAINED],
        timings=[f"timings/sglu/{d}/{f}.json" for f in ("fig3a", "fig3c") for d in SGLU_TRAINED],
    output:
        md="reports/sglu/index.md",
        html=report("reports/sglu/index.html", caption="../report/sglu_index.rst", category="Reports"),
        tables=[f"reports/sglu/{t}.csv" for t in ("table3", "fig3a", "fig3b", "fig3c", "fig3d", "claims")],
        fig3a=report("reports/sglu/fig3a.png", caption="../report/sglu_fig3a.rst", category="SGLU"),
        fig3b=report("reports/sglu/fig3b.png", caption="../report/sglu_fig3b.rst", category="SGLU"),
        fig3c=report("reports/sglu/fig3c.png", caption="../report/sglu_fig3c.rst", category="SGLU"),
        fig3d=report("reports/sglu/fig3d.png", caption="../report/sglu_fig3d.rst", category="SGLU"),
    params:
        missing=sglu_missing_args(),
    log:
        "logs/sglu/report.log",
    benchmark:
        "logs/benchmarks/sglu/report.tsv"
    shell:
        "{PY} sglu-report --accounting {input.accounting} --fig3a {input.fig3a} "
        "--fig3c {input.fig3c} "
        "--timings {input.timings} {params.missing} --out-dir reports/sglu > {log} 2>&1"
