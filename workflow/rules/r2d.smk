# R2D (Mu & Klabjan 2025): per data set (the stand-ins, and eICU / Lacuna-100 when on disk) and seed, one learning
# run shared by every rewind and epsilon (r2d_run); the baselines HF and CNS on the baseline seed (r2d_baselines);
# then the report with the data-free sigma tables beside the paper's numbers.


rule r2d_run:
    input:
        processed=lambda wc: r2d_processed(wc.dataset),
        code=R2D_CODE,
    output:
        result="results/r2d/{dataset}/s{seed}.json",
        timing="timings/r2d/{dataset}/s{seed}.json",
        checkpoints=directory("artifacts/r2d/{dataset}/s{seed}"),
    wildcard_constraints:
        dataset=r"[a-z0-9_]+",
        seed=r"\d+",
    params:
        cfg=lambda wc: r2d_run_params(wc.dataset),
        processed=lambda wc: r2d_processed_option(wc.dataset),
    log:
        "logs/r2d/{dataset}/s{seed}.log",
    benchmark:
        "logs/benchmarks/r2d/{dataset}/s{seed}.tsv"
    threads: SMALL_THREADS  # small models: one thread each, two jobs side by side (2 threads ran 8x slower on a busy 2-core host)
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} r2d-run --dataset {wildcards.dataset} --seed {wildcards.seed} {params.processed} "
        "--out {output.result} --timing {output.timing} --checkpoints {output.checkpoints} > {log} 2>&1"


rule r2d_baselines:
    input:
        processed=lambda wc: r2d_processed(wc.dataset),
        run=r2d_baseline_run,
        code=R2D_CODE,
    output:
        result="results/r2d/{dataset}/baselines.json",
        timing="timings/r2d/{dataset}/baselines.json",
    wildcard_constraints:
        dataset=r"[a-z0-9_]+",
    params:
        cfg=lambda wc: r2d_baselines_params(wc.dataset),
        processed=lambda wc: r2d_processed_option(wc.dataset),
        seed=R2D["baseline_seed"],
    log:
        "logs/r2d/{dataset}/baselines.log",
    benchmark:
        "logs/benchmarks/r2d/{dataset}/baselines.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} r2d-baselines --dataset {wildcards.dataset} --seed {params.seed} "
        "{params.processed} --learning {input.run} --out {output.result} --timing {output.timing} > {log} 2>&1"


rule r2d_report:
    input:
        code=code("unlearning.experiments.r2d.report"),
        results=r2d_results(),
        baselines=r2d_baseline_results(),
        timings=r2d_timings(),
    output:
        md="reports/r2d/index.md",
        html=report("reports/r2d/index.html", caption="../report/r2d_index.rst", category="Reports"),
        figure1=report("reports/r2d/figure1.png", caption="../report/r2d_figure1.rst", category="R2D"),
        tables=[f"reports/r2d/{t}.csv" for t in R2D_TABLES],
    params:
        missing=lambda wc: r2d_missing_args(),
        accounting=R2D["accounting"],
    log:
        "logs/r2d/report.log",
    benchmark:
        "logs/benchmarks/r2d/report.tsv"
    shell:
        "{PY} r2d-report --results {input.results} --baselines {input.baselines} --timings {input.timings} "
        "{params.missing} --out-dir reports/r2d > {log} 2>&1"
