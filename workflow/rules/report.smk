# Tables, figure and the Markdown/HTML report.


rule report:
    input:
        results=spine_results(),
        costs=spine_costs(),
    output:
        md="reports/index.md",
        html="reports/index.html",
        table="reports/spine/metrics.csv",
        cost="reports/spine/cost.csv",
        figure=report("reports/figures/spine.png", caption="../report/spine.rst", category="Spine"),
    log:
        "logs/report.log",
    benchmark:
        "logs/benchmarks/report.tsv"
    shell:
        "{PY} report --exp spine --results {input.results} --costs {input.costs} --out-dir reports > {log} 2>&1"
