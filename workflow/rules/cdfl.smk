# CDFL (Wu et al. 2026; the method is DU): one cell of Tables I-IV per (dataset on disk, partition, topology,
# seed): the original D-PSGD run, DU and RT, sample- and class-wise; the convex stand-in (cdfl.convex.dataset, when
# on disk); Figure 1's curves (IID + Erdos-Renyi) per dataset on disk; then the report beside the paper's numbers.


rule cdfl_cell:
    input:
        features=cdfl_features,
        code=CDFL_CODE,
    output:
        result="results/cdfl/{dataset}/{partition}_{topology}_s{seed}.json",
        timing="timings/cdfl/{dataset}/{partition}_{topology}_s{seed}.json",
    wildcard_constraints:
        partition="iid|dirichlet",
        topology="ring|erdos_renyi|complete",
        seed=r"\d+",
    params:
        cfg=lambda wc: cdfl_cell_params(wc.dataset),
    log:
        "logs/cdfl/{dataset}/{partition}_{topology}_s{seed}.log",
    benchmark:
        "logs/benchmarks/cdfl/{dataset}/{partition}_{topology}_s{seed}.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} cdfl-cell --dataset {wildcards.dataset} --partition {wildcards.partition} "
        "--topology {wildcards.topology} --seed {wildcards.seed} --features {input.features} "
        "--out {output.result} --timing {output.timing} > {log} 2>&1"


rule cdfl_convex:
    input:
        features="data/features/{dataset}.safetensors",
        code=code("unlearning.experiments.cdfl.convex"),
    output:
        result="results/cdfl/{dataset}/convex.json",
        timing="timings/cdfl/{dataset}/convex.json",
    wildcard_constraints:
        dataset=r"[a-z0-9_]+",
    params:
        cfg=lambda wc: cdfl_convex_params(),
    log:
        "logs/cdfl/{dataset}/convex.log",
    benchmark:
        "logs/benchmarks/cdfl/{dataset}/convex.tsv"
    threads: THREADS
    shell:
        "{PY} --threads {threads} cdfl-convex --dataset {wildcards.dataset} --features {input.features} "
        "--out {output.result} --timing {output.timing} > {log} 2>&1"


rule cdfl_figure1:
    input:
        features=cdfl_features,
        code=code("unlearning.experiments.cdfl.figure1"),
    output:
        result="results/cdfl/{dataset}/figure1.json",
        timing="timings/cdfl/{dataset}/figure1.json",
    wildcard_constraints:
        dataset=r"[a-z0-9_]+",
    params:
        cfg=lambda wc: cdfl_figure1_params(wc.dataset),
    log:
        "logs/cdfl/{dataset}/figure1.log",
    benchmark:
        "logs/benchmarks/cdfl/{dataset}/figure1.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} cdfl-figure1 --dataset {wildcards.dataset} --features {input.features} "
        "--out {output.result} --timing {output.timing} > {log} 2>&1"


rule cdfl_calibration:
    input:
        features=cdfl_features,
        code=code("unlearning.experiments.cdfl.calibrate"),
    output:
        result="results/cdfl/{dataset}/calibration.json",
        timing="timings/cdfl/{dataset}/calibration.json",
    wildcard_constraints:
        dataset=r"[a-z0-9_]+",
    params:
        cfg=lambda wc: {**cdfl_cell_params(wc.dataset), "calibration": CDFL["calibration"]},
    log:
        "logs/cdfl/{dataset}/calibration.log",
    benchmark:
        "logs/benchmarks/cdfl/{dataset}/calibration.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} cdfl-calibrate --dataset {wildcards.dataset} --features {input.features} "
        "--out {output.result} --timing {output.timing} > {log} 2>&1"


rule cdfl_timing:
    input:
        code=code("unlearning.experiments.cdfl.timing"),
    output:
        result="results/cdfl/{dataset}/timing_synthetic.json",
    wildcard_constraints:
        dataset=r"[a-z0-9_]+",
    params:
        cfg=lambda wc: {**cdfl_cell_params(wc.dataset), "synthetic_timing": CDFL["synthetic_timing"]},
        rounds=CDFL["synthetic_timing"]["rounds"],
    log:
        "logs/cdfl/{dataset}/timing_synthetic.log",
    benchmark:
        "logs/benchmarks/cdfl/{dataset}/timing_synthetic.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} cdfl-timing --dataset {wildcards.dataset} --rounds {params.rounds} "
        "--out {output.result} > {log} 2>&1"


rule cdfl_report:
    input:
        code=code("unlearning.experiments.cdfl.report"),
        results=cdfl_results(),
        timings=cdfl_timings(),
        convex=cdfl_convex_results(),
        figure1=cdfl_figure1_results(),
        calibration=cdfl_calibration_results(),
        synthetic_timing=cdfl_timing_results(),
    output:
        md="reports/cdfl/index.md",
        html=report("reports/cdfl/index.html", caption="../report/cdfl_index.rst", category="Reports"),
        figure1=report("reports/cdfl/figure1.png", caption="../report/cdfl_figure1.rst", category="CDFL"),
        figure2=report("reports/cdfl/figure2.png", caption="../report/cdfl_figure2.rst", category="CDFL"),
        tables=[f"reports/cdfl/{t}.csv" for t in ("table1", "table2", "table3", "table4", "timing", "sweep_damping",
                                                  "sweep_sigma", "convex", "convex_regime", "client", "figure1",
                                                  "calibration")],
    params:
        missing=cdfl_missing_args(),
    log:
        "logs/cdfl/report.log",
    benchmark:
        "logs/benchmarks/cdfl/report.tsv"
    shell:
        "{PY} cdfl-report --results {input.results} --timings {input.timings} --convex {input.convex} "
        "--figure1 {input.figure1} --calibration {input.calibration} "
        "--synthetic-timing {input.synthetic_timing} "
        "{params.missing} "
        "--out-dir reports/cdfl > {log} 2>&1"
