# Tables, figure and the Markdown/HTML report.


rule report:
    input:
        results=spine_results(),
        timings=spine_timings(),
    output:
        md="reports/index.md",
        html="reports/index.html",
        table="reports/spine/metrics.csv",
        timing="reports/spine/timing.csv",
        figure=report("reports/figures/spine.png", caption="../report/spine.rst", category="Spine"),
    log:
        "logs/report.log",
    benchmark:
        "logs/benchmarks/report.tsv"
    shell:
        "{PY} report --exp spine --results {input.results} --timings {input.timings} --out-dir reports > {log} 2>&1"
