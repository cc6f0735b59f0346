# Every paper's report (Markdown and HTML, figures embedded) and the front page that links them.


rule provenance:
    input:
        spine_results(),
        pdudt_results(),
        [f"results/sglu/{d}/accounting.json" for d in SGLU["datasets"]],
        [f"results/sglu/{d}/{f}.json" for f in ("fig3a", "fig3c") for d in SGLU_TRAINED],
        cdfl_results(),
        r2d_results(),
        rrdu_seed_results(),
    output:
        "reports/provenance.json",
    log:
        "logs/provenance.log",
    threads: THREADS
    shell:
        "{PROVENANCE} --threads {threads} --out {output} > {log} 2>&1"


rule report:
    input:
        results=spine_results(),
        timings=spine_timings(),
        code=code("unlearning.experiments.spine.report"),
    output:
        md="reports/spine/index.md",
        html=report("reports/spine/index.html", caption="../report/spine_index.rst", category="Reports"),
        table="reports/spine/metrics.csv",
        timing="reports/spine/timing.csv",
        figure=report("reports/spine/spine.png", caption="../report/spine.rst", category="Spine"),
    log:
        "logs/report.log",
    benchmark:
        "logs/benchmarks/report.tsv"
    shell:
        "{PY} report --exp spine --results {input.results} --timings {input.timings} "
        "--out-dir reports > {log} 2>&1"


rule index:
    input:
        "reports/provenance.json",
        code("unlearning.experiments.common.cli"),
        "reports/spine/index.md",
        "reports/pdudt/index.md",
        [f"reports/pdudt/{t}.csv" for t in ("table2", "table3", "figure1", "figure2", "subsequent", "gaps")],
        "reports/sglu/index.md",
        [f"reports/sglu/{t}.csv" for t in ("table3", "fig3a", "fig3b", "fig3c", "fig3d", "claims")],
        "reports/cdfl/index.md",
        [f"reports/cdfl/{t}.csv" for t in ("table1", "table2", "table3", "table4", "timing")],
        "reports/r2d/index.md",
        [f"reports/r2d/{t}.csv" for t in R2D_TABLES],
        "reports/rrdu/index.md",
        [f"reports/rrdu/{t}.csv" for t in RRDU_TABLES],
        "reports/common_ground/index.md",
        [f"reports/common_ground/{t}" for t in ("centralized.csv", "centralized_mlp.csv", "client.csv", "sample.csv",
                                                "summary.json", "utility_cost.png")],
    output:
        md="reports/index.md",
        html=report("reports/index.html", caption="../report/index.rst", category="Reports"),
        counted=multiext("reports/counted", ".md", ".html"),
    log:
        "logs/index.log",
    benchmark:
        "logs/benchmarks/index.tsv"
    shell:
        "{PY} index --provenance reports/provenance.json --out-dir reports > {log} 2>&1"
