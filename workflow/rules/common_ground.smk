# Common ground (issue 16; experiments/common_ground/): the methods of every paper on one task and one budget, with
# an empirical audit of each certificate. The centralized setting on the convex model and on an MLP, on the SGLU
# features of common.centralized.dataset; the decentralized client and sample settings as small jobs (common.smk),
# on the standardised pixels of common.decentralized.dataset (each missing, with the reason, where its data is not on
# disk).


rule common_central_method:
    input:
        features=f"data/sglu/{COMMON_DATASET}.safetensors",
        code=lambda wc: central_method_code(wc.table, wc.method),
    output:
        result=cg_layout.central("{table}", "{method}"),
        timing=cg_layout.central("{table}", "{method}", kind="timings"),
    wildcard_constraints:
        table="centralized|centralized_mlp",
    params:
        cfg=lambda wc: central_method_params(wc.table, wc.method),
    log:
        "logs/common_ground/{table}/{method}.log",
    benchmark:
        "logs/benchmarks/common_ground/{table}/{method}.tsv"
    threads: lambda wc: THREADS if wc.table == "centralized" else SMALL_THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} common-central {wildcards.table} --method {wildcards.method} "
        "--features {input.features} --out {output.result} --timing {output.timing} > {log} 2>&1"


rule common_central_combine:
    input:
        parts=lambda wc: [cg_layout.central(wc.table, m) for m in central_methods(wc.table)],
        timings=lambda wc: [cg_layout.central(wc.table, m, kind="timings") for m in central_methods(wc.table)],
        code=lambda wc: central_combine_code(wc.table),
    output:
        result=cg_layout.central("{table}"),
        timing=cg_layout.central("{table}", kind="timings"),
    wildcard_constraints:
        table="centralized|centralized_mlp",
    params:
        methods=lambda wc: {t: central_methods(t) for t in CENTRAL_TABLES},
    log:
        "logs/common_ground/{table}.log",
    benchmark:
        "logs/benchmarks/common_ground/{table}.tsv"
    shell:
        "{PY} common-central {wildcards.table} --parts {input.parts} --part-timings {input.timings} "
        "--out {output.result} --timing {output.timing} > {log} 2>&1"


rule common_part_references:
    input:
        features=COMMON_DEC_FEATURES,
        code=COMMON_PART_CODE,
    output:
        cg_layout.references("{setting}", "{seed}"),
    wildcard_constraints:
        setting="client|sample",
        seed=r"\d+",
    params:
        cfg=lambda wc: cg_layout.task_params(COMMON_DEC, wc.setting),
    log:
        "logs/common_ground/{setting}_s{seed}/references.log",
    benchmark:
        "logs/benchmarks/common_ground/{setting}_s{seed}/references.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
    shell:
        "{PY} --threads {threads} common-part references --setting {wildcards.setting} --seed {wildcards.seed} "
        "--features {input.features} > {log} 2>&1"


rule common_part_original:
    input:
        features=COMMON_DEC_FEATURES,
        references=cg_layout.references("{setting}", "{seed}"),
        code=lambda wc: common_family_code(wc.family),
    output:
        state=directory(cg_layout.family_dir("{setting}", "{seed}", "{family}")),
        row=cg_layout.original("{setting}", "{seed}", "{family}"),
        timing=cg_layout.original_timing("{setting}", "{seed}", "{family}"),
    wildcard_constraints:
        setting="client|sample",
        seed=r"\d+",
        family="|".join(FAMILIES.names()),
    params:
        cfg=lambda wc: cg_layout.family_params(COMMON_DEC, wc.setting, wc.family),
    log:
        "logs/common_ground/{setting}_s{seed}/original_{family}.log",
    benchmark:
        "logs/benchmarks/common_ground/{setting}_s{seed}/original_{family}.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
    shell:
        "{PY} --threads {threads} common-part original --setting {wildcards.setting} --seed {wildcards.seed} "
        "--family {wildcards.family} --features {input.features} > {log} 2>&1"


rule common_part_method:
    input:
        unpack(common_method_inputs),
        features=COMMON_DEC_FEATURES,
        code=lambda wc: common_method_code(wc.method),
    output:
        part=cg_layout.method("{setting}", "{method}"),
        timing=cg_layout.method_timing("{setting}", "{method}"),
    wildcard_constraints:
        setting="client|sample",
        method="|".join(METHODS.names()),
    params:
        cfg=lambda wc: cg_layout.method_params(COMMON_DEC, COMMON["budget"], wc.setting, wc.method),
    log:
        "logs/common_ground/{setting}/method_{method}.log",
    benchmark:
        "logs/benchmarks/common_ground/{setting}/method_{method}.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
    shell:
        "{PY} --threads {threads} common-part method --setting {wildcards.setting} --method {wildcards.method} "
        "--features {input.features} > {log} 2>&1"


rule common_part_combine:
    input:
        unpack(common_combine_inputs),
        code=common_combine_code,
    output:
        results=[cg_layout.result("{setting}", s) for s in COMMON_DEC["seeds"]],
        scores=[cg_layout.scores("{setting}", s) for s in COMMON_DEC["seeds"]],
        timings=[cg_layout.timing("{setting}", s) for s in COMMON_DEC["seeds"]],
    wildcard_constraints:
        setting="client|sample",
    params:
        cfg=lambda wc: common_combine_params(wc.setting),
    log:
        "logs/common_ground/{setting}/combine.log",
    benchmark:
        "logs/benchmarks/common_ground/{setting}/combine.tsv"
    shell:
        "{PY} common-part combine --setting {wildcards.setting} > {log} 2>&1"


rule common_references:
    input:
        features=COMMON_DEC_FEATURES,
        original=cg_layout.family_dir("{setting}", "{seed}", "dsgd"),
        code=COMMON_REF_CODE,
    output:
        result="results/common_ground/references_{setting}_s{seed}.json",
    wildcard_constraints:
        setting="client",
        seed=r"\d+",
    params:
        cfg=COMMON_REF_PARAMS,
        originals=lambda wc: cg_layout.family_root(wc.setting, wc.seed),
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
        "--features {input.features} --originals {params.originals} --out {output.result} > {log} 2>&1"


rule common_canary:
    input:
        features=COMMON_DEC_FEATURES,
        code=lambda wc: common_canary_code(wc.method),
    output:
        cg_layout.canary("{setting}", "{method}"),
    wildcard_constraints:
        setting="client|sample",
        method="|".join(METHODS.names()),
    params:
        cfg=lambda wc: cg_layout.canary_params(COMMON_DEC, COMMON["budget"], wc.setting, wc.method),
    log:
        "logs/common_ground/{setting}/canary_{method}.log",
    benchmark:
        "logs/benchmarks/common_ground/{setting}/canary_{method}.tsv"
    threads: SMALL_THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
    shell:
        "{PY} --threads {threads} common-canary --setting {wildcards.setting} --method {wildcards.method} "
        "--features {input.features} --out {output} > {log} 2>&1"


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
        canary=COMMON_CANARY,
    output:
        md="reports/common_ground/index.md",
        html=report("reports/common_ground/index.html", caption="../report/common_ground_index.rst",
                    category="Reports"),
        tables=[f"reports/common_ground/{t}.csv" for t in ("centralized", "centralized_mlp", "client", "sample",
                                                           "originals", "r2d_calibration", "canary")],
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
