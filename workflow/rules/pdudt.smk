# PDUDT (specs/pdudt.md): one experiment per dataset, pdudt_<dataset>, after the shared split, pretrain
# (gradient mixing with its history) and retrain. Methods that add noise run every sigma in one job;
# checkpoint A is right after unlearning, checkpoint B after the subsequent rounds (Eq. 10). Checkpoint A is
# evaluated in its own job (pdudt_evaluate_a), so a short run yields Table 3's A rows without the subsequent rounds;
# pdudt_evaluate adds B to it.


rule pdudt_server:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=PDUDT_CODE,
    output:
        models="artifacts/{exp}/server/{kind}/models.safetensors",
        cost="artifacts/{exp}/server/{kind}/cost.json",
        history=directory("artifacts/{exp}/server/{kind}/history"),
        timing="timings/{exp}/server_{kind}.json",
    wildcard_constraints:
        kind="|".join(PDUDT_SERVERS),
    params:
        cfg=lambda wc: pdudt_server_params(wc.exp, wc.kind),
    log:
        "logs/pdudt/{exp}/server_{kind}.log",
    benchmark:
        "logs/benchmarks/pdudt/{exp}/server_{kind}.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
        mem_mb=8000,
    shell:
        "{PY} --threads {threads} pdudt-server --exp {wildcards.exp} --kind {wildcards.kind} --features {input.features} "
        "--split {input.split} --out-dir artifacts/{wildcards.exp}/server/{wildcards.kind} "
        "--timing {output.timing} > {log} 2>&1"


rule pdudt_variants:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=PDUDT_CODE,
        trained=pdudt_trained_inputs,
    output:
        models="artifacts/{exp}/unlearn/{method}/models.safetensors",
        cost="artifacts/{exp}/unlearn/{method}/cost.json",
        timing="timings/{exp}/{method}.json",
    wildcard_constraints:
        method="|".join(PDUDT_UNLEARNED),
    params:
        trained_dir=lambda wc: pdudt_trained_dir(wc.exp, wc.method),
        cfg=lambda wc: pdudt_method_params(wc.exp, wc.method),
    log:
        "logs/pdudt/{exp}/unlearn_{method}.log",
    benchmark:
        "logs/benchmarks/pdudt/{exp}/unlearn_{method}.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} pdudt-variants --exp {wildcards.exp} --method {wildcards.method} --features {input.features} "
        "--split {input.split} --trained-dir {params.trained_dir} "
        "--out-dir artifacts/{wildcards.exp}/unlearn/{wildcards.method} --timing {output.timing} > {log} 2>&1"


rule pdudt_continue:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=PDUDT_CODE,
        models=lambda wc: pdudt_models_a(wc.exp, wc.method),
    output:
        models="artifacts/{exp}/subsequent/{method}/models.safetensors",
        curve="artifacts/{exp}/subsequent/{method}/curve.json",
    wildcard_constraints:
        method="|".join(PDUDT_CONTINUED),
    params:
        cfg=lambda wc: experiment_config(config, wc.exp)["subsequent"],
    log:
        "logs/pdudt/{exp}/continue_{method}.log",
    benchmark:
        "logs/benchmarks/pdudt/{exp}/continue_{method}.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} pdudt-continue --exp {wildcards.exp} --method {wildcards.method} --features {input.features} "
        "--split {input.split} --models {input.models} "
        "--out-dir artifacts/{wildcards.exp}/subsequent/{wildcards.method} > {log} 2>&1"


rule pdudt_attack:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=PDUDT_CODE,
    output:
        "artifacts/{exp}/attack/shadow.safetensors",
    params:
        cfg=lambda wc: {**training_params(wc.exp), "mia": experiment_config(config, wc.exp)["mia"]},
    log:
        "logs/pdudt/{exp}/attack.log",
    benchmark:
        "logs/benchmarks/pdudt/{exp}/attack.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} pdudt-attack --exp {wildcards.exp} --features {input.features} --split {input.split} "
        "--out {output} > {log} 2>&1"


rule pdudt_gaps:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=PDUDT_CODE,
        pretrain="artifacts/{exp}/pretrain/models.safetensors",
        history="artifacts/{exp}/pretrain/history",
        class_curve="artifacts/{exp}/pretrain/class_curve.json",
        retrain="artifacts/{exp}/unlearn/retrain/models.safetensors",
    output:
        "results/{exp}/gaps.json",
    params:
        cfg=lambda wc: pdudt_method_params(wc.exp, "pdudt_es"),
    log:
        "logs/pdudt/{exp}/gaps.log",
    benchmark:
        "logs/benchmarks/pdudt/{exp}/gaps.tsv"
    threads: THREADS
    shell:
        "{PY} --threads {threads} pdudt-gaps --exp {wildcards.exp} --features {input.features} --split {input.split} "
        "--pretrain-dir artifacts/{wildcards.exp}/pretrain --retrain-models {input.retrain} --out {output} "
        "> {log} 2>&1"


rule pdudt_evaluate_a:
    input:
        unpack(pdudt_evaluate_a_inputs),
        code=PDUDT_CODE,
    output:
        "results/{exp}/checkpoint_a/{method}.json",
    wildcard_constraints:
        exp="pdudt(-[a-z0-9]+)?_[a-z0-9_]+",
        method="|".join(("original", "fedrecovery_original", "retrain", *PDUDT_UNLEARNED)),
    params:
        optional=lambda wc: pdudt_evaluate_options(wc, ("cost",)),
        cfg=lambda wc: {k: experiment_config(config, wc.exp)[k] for k in ("eval", "mia")},
    log:
        "logs/pdudt/{exp}/evaluate_a_{method}.log",
    benchmark:
        "logs/benchmarks/pdudt/{exp}/evaluate_a_{method}.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} pdudt-evaluate --exp {wildcards.exp} --method {wildcards.method} --features {input.features} "
        "--split {input.split} --attack {input.attack} --models-a {input.models_a} {params.optional} "
        "--out {output} > {log} 2>&1"


rule pdudt_evaluate:
    input:
        unpack(pdudt_evaluate_inputs),
        code=PDUDT_CODE,
    output:
        "results/{exp}/{method}.json",
    wildcard_constraints:
        exp="pdudt(-[a-z0-9]+)?_[a-z0-9_]+",
        method="|".join(("original", "fedrecovery_original", "retrain", *PDUDT_UNLEARNED)),
    params:
        optional=pdudt_evaluate_options,
        cfg=lambda wc: {k: experiment_config(config, wc.exp)[k] for k in ("eval", "mia")},
    log:
        "logs/pdudt/{exp}/evaluate_{method}.log",
    benchmark:
        "logs/benchmarks/pdudt/{exp}/evaluate_{method}.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} pdudt-evaluate --exp {wildcards.exp} --method {wildcards.method} --features {input.features} "
        "--split {input.split} --attack {input.attack} --models-a {input.models_a} {params.optional} "
        "--out {output} > {log} 2>&1"


rule pdudt_timing:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=PDUDT_CODE,
        history="artifacts/{exp}/pretrain/history",
        servers=lambda wc: [f"artifacts/{wc.exp}/server/{k}/history" for k in PDUDT_SERVERS if k in PDUDT["methods"]],
    output:
        "timings/{exp}/table2.json",
    params:
        cfg=lambda wc: experiment_config(config, wc.exp)["timing"],
    log:
        "logs/pdudt/{exp}/timing.log",
    benchmark:
        "logs/benchmarks/pdudt/{exp}/timing.tsv"
    threads: THREADS
    resources:
        gpu=GPU,
    shell:
        "{PY} --threads {threads} pdudt-timing --exp {wildcards.exp} --features {input.features} --split {input.split} "
        "--pretrain-dir artifacts/{wildcards.exp}/pretrain --server-root artifacts/{wildcards.exp}/server "
        "--out {output} > {log} 2>&1"


rule pdudt_report:
    input:
        code=code("unlearning.experiments.pdudt.report"),
        results=pdudt_results(),
        curves=pdudt_curves(),
        timings=pdudt_timing_tables(),
        gaps=pdudt_gap_files(),
        settings=pdudt_setting_results(),
    output:
        md="reports/pdudt/index.md",
        html=report("reports/pdudt/index.html", caption="../report/pdudt_index.rst", category="Reports"),
        tables=[f"reports/pdudt/{t}.csv" for t in ("table2", "table3", "figure1", "figure2", "subsequent", "gaps",
                                                   "settings", "gradient_norms", "class_curve")],
        figure1=report("reports/pdudt/figure1.png", caption="../report/pdudt_figure1.rst", category="PDUDT"),
        figure2=report("reports/pdudt/figure2.png", caption="../report/pdudt_figure2.rst", category="PDUDT"),
        curves=report("reports/pdudt/subsequent.png", caption="../report/pdudt_subsequent.rst", category="PDUDT"),
        class_curve=report("reports/pdudt/class_curve.png", caption="../report/pdudt_class_curve.rst",
                           category="PDUDT"),
    params:
        missing=pdudt_missing_args(),
    log:
        "logs/pdudt/report.log",
    benchmark:
        "logs/benchmarks/pdudt/report.tsv"
    shell:
        "{PY} pdudt-report --results {input.results} --curves {input.curves} "
        "--timings {input.timings} "
        "--gaps {input.gaps} --settings {input.settings} "
        "{params.missing} --out-dir reports/pdudt > {log} 2>&1"
