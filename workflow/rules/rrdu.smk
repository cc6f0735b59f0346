# RR-DU (Lamri & Maniatakos 2025): per dataset on disk, one job per seed (the poisoned original and Table 3's
# runs, writing the original's checkpoint), four independent jobs on the first seed's original (the baseline run and
# Tables 14-17, the sensitivity reading, Figure 1's baselines, retraining) joined into one ablations file; then the
# report beside the paper's numbers.


rule rrdu_seed:
    input:
        processed=rrdu_processed,
        code=RRDU_CODE,
    output:
        result="results/rrdu/{dataset}/seed{seed}.json",
        timing="timings/rrdu/{dataset}/seed{seed}.json",
        checkpoint="artifacts/rrdu/{dataset}/s{seed}/original.safetensors",
    wildcard_constraints:
        dataset=r"[a-z0-9_]+",
        seed=r"\d+",
    params:
        cfg=lambda wc: rrdu_params(wc.dataset),
    log:
        "logs/rrdu/{dataset}/seed{seed}.log",
    benchmark:
        "logs/benchmarks/rrdu/{dataset}/seed{seed}.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} rrdu-seed --dataset {wildcards.dataset} --seed {wildcards.seed} "
        "--processed {input.processed} --out {output.result} --timing {output.timing} "
        "--checkpoint {output.checkpoint} > {log} 2>&1"


rule rrdu_ablation_part:
    input:
        processed=rrdu_processed,
        checkpoint=lambda wc: f"artifacts/rrdu/{wc.dataset}/s{RRDU['seeds'][0]}/original.safetensors",
        code=RRDU_CODE,
    output:
        result="results/rrdu/{dataset}/ablations/{part}.json",
        timing="timings/rrdu/{dataset}/ablations/{part}.json",
    wildcard_constraints:
        dataset=r"[a-z0-9_]+",
        part="|".join(rrdu_parts(RRDU)),
    params:
        cfg=lambda wc: rrdu_params(wc.dataset),
    log:
        "logs/rrdu/{dataset}/ablations_{part}.log",
    benchmark:
        "logs/benchmarks/rrdu/{dataset}/ablations_{part}.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} rrdu-ablations --dataset {wildcards.dataset} --part {wildcards.part} "
        "--processed {input.processed} --checkpoint {input.checkpoint} --out {output.result} "
        "--timing {output.timing} > {log} 2>&1"


rule rrdu_ablations:
    input:
        parts=lambda wc: rrdu_ablation_parts(wc.dataset, "results"),
        timings=lambda wc: rrdu_ablation_parts(wc.dataset, "timings"),
        code=RRDU_CODE,
    output:
        result="results/rrdu/{dataset}/ablations.json",
        timing="timings/rrdu/{dataset}/ablations.json",
    wildcard_constraints:
        dataset=r"[a-z0-9_]+",
    log:
        "logs/rrdu/{dataset}/ablations.log",
    benchmark:
        "logs/benchmarks/rrdu/{dataset}/ablations.tsv"
    shell:
        "{PY} rrdu-ablations-merge --parts {input.parts} --part-timings {input.timings} --out {output.result} "
        "--timing {output.timing} > {log} 2>&1"


rule rrdu_report:
    input:
        code=code("unlearning.experiments.rrdu.report"),
        seeds=rrdu_seed_results(),
        ablations=rrdu_ablation_results(),
        timings=rrdu_timings(),
    output:
        md="reports/rrdu/index.md",
        html=report("reports/rrdu/index.html", caption="../report/rrdu_index.rst", category="Reports"),
        figure1=report("reports/rrdu/figure1.png", caption="../report/rrdu_figure1.rst", category="RR-DU"),
        tables=[f"reports/rrdu/{t}.csv" for t in RRDU_TABLES],
    params:
        missing=rrdu_missing_args(),
    log:
        "logs/rrdu/report.log",
    benchmark:
        "logs/benchmarks/rrdu/report.tsv"
    shell:
        "{PY} rrdu-report --seeds {input.seeds} --ablations {input.ablations} --timings {input.timings} "
        "{params.missing} --out-dir reports/rrdu > {log} 2>&1"
