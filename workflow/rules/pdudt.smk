# PDUDT (specs/pdudt.md): one experiment per dataset, pdudt_<dataset>, after the shared split, pretrain
# (gradient mixing with its history) and retrain. Methods that add noise run every sigma in one job;
# checkpoint A is right after unlearning, checkpoint B after the subsequent rounds (Eq. 10). Checkpoint A is
# evaluated in its own job (pdudt_evaluate_a_<exp>), so a short run yields Table 3's A rows without the subsequent
# rounds; pdudt_evaluate_<exp> adds B to it. The evaluations run every method of an experiment in one job (issue
# 40: a job's start, about 2.5 s of imports, cost more than most methods' evaluation, and the attack's forests are
# fitted once); so do the training steps at scale quick (pdudt_job_groups), one job a method at scale paper. Those
# rules are written out per experiment below; each method's files stay its own (experiments/pdudt/layout.py).


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


rule pdudt_timing:
    input:
        features=lambda wc: features_path(wc.exp),
        split="data/splits/{exp}.safetensors",
        code=PDUDT_CODE,
        history="artifacts/{exp}/pretrain/history",
        servers=lambda wc: [f"{pdudt_layout.server_dir(wc.exp, k)}/history" for k in
                            experiment_config(config, wc.exp)["methods"] if pdudt_layout.has_server(k)],
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
        "--pretrain-dir artifacts/{wildcards.exp}/pretrain --out {output} > {log} 2>&1"


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


for _exp in PDUDT_EXPS + PDUDT_SETTING_EXPS:
    _id = _exp.replace("-", "_")
    _cfg = experiment_config(config, _exp)
    _methods = pdudt_layout.evaluated(_cfg["methods"])
    _continued = pdudt_layout.continued(_cfg["methods"], _cfg["subsequent"]["rounds"])
    _unlearned = pdudt_layout.unlearned(_methods)
    _servers = [k for k in _methods if pdudt_layout.has_server(k)]

    for _group, _tag in pdudt_job_groups(_servers):

        rule:
            name:
                f"pdudt_server_{_id}{_tag}"
            input:
                features=features_path(_exp),
                split=f"data/splits/{_exp}.safetensors",
                code=PDUDT_CODE,
            output:
                models=[f"{pdudt_layout.server_dir(_exp, k)}/models.safetensors" for k in _group],
                costs=[f"{pdudt_layout.server_dir(_exp, k)}/cost.json" for k in _group],
                histories=[directory(f"{pdudt_layout.server_dir(_exp, k)}/history") for k in _group],
                timings=[pdudt_layout.timing(_exp, f"server_{k}") for k in _group],
            params:
                exp=_exp,
                kinds=" ".join(_group),
                cfg={**training_params(_exp), **{k: _cfg.get(k, {}) for k in _group}},
            log:
                f"logs/pdudt/{_exp}/server{_tag}.log",
            benchmark:
                f"logs/benchmarks/pdudt/{_exp}/server{_tag}.tsv"
            threads: THREADS
            resources:  # on Slurm (the profile's set-resources names rules; these are written out per experiment)
                gpu=GPU,
                mem_mb=8000,
                runtime=240,
            shell:
                "{PY} --threads {threads} pdudt-server --exp {params.exp} --kinds {params.kinds} "
                "--features {input.features} --split {input.split} > {log} 2>&1"

    for _group, _tag in pdudt_job_groups(_unlearned):

        rule:
            name:
                f"pdudt_variants_{_id}{_tag}"
            input:
                features=features_path(_exp),
                split=f"data/splits/{_exp}.safetensors",
                code=PDUDT_CODE,
                trained=sorted({f for m in _group for f in pdudt_trained_files(_exp, m)}),
            output:
                models=[pdudt_layout.models_a(_exp, m) for m in _group],
                costs=[pdudt_layout.cost(_exp, m) for m in _group],
                timings=[pdudt_layout.timing(_exp, m) for m in _group],
            params:
                exp=_exp,
                methods=" ".join(_group),
                cfg={m: pdudt_method_params(_exp, m) for m in _group},
            log:
                f"logs/pdudt/{_exp}/variants{_tag}.log",
            benchmark:
                f"logs/benchmarks/pdudt/{_exp}/variants{_tag}.tsv"
            threads: THREADS
            resources:
                gpu=GPU,
            shell:
                "{PY} --threads {threads} pdudt-variants --exp {params.exp} --methods {params.methods} "
                "--features {input.features} --split {input.split} > {log} 2>&1"

    for _group, _tag in pdudt_job_groups(_continued):

        rule:
            name:
                f"pdudt_continue_{_id}{_tag}"
            input:
                features=features_path(_exp),
                split=f"data/splits/{_exp}.safetensors",
                code=PDUDT_CODE,
                models=[pdudt_layout.models_a(_exp, m) for m in _group],
            output:
                models=[pdudt_layout.models_b(_exp, m) for m in _group],
                curves=[f"{pdudt_layout.subsequent_dir(_exp, m)}/curve.json" for m in _group],
            params:
                exp=_exp,
                methods=" ".join(_group),
                cfg=_cfg["subsequent"],
            log:
                f"logs/pdudt/{_exp}/continue{_tag}.log",
            benchmark:
                f"logs/benchmarks/pdudt/{_exp}/continue{_tag}.tsv"
            threads: THREADS
            resources:  # on Slurm: a method's subsequent rounds took up to 40 CPU-minutes at the paper's sizes
                gpu=GPU,
                runtime=480,
            shell:
                "{PY} --threads {threads} pdudt-continue --exp {params.exp} --methods {params.methods} "
                "--features {input.features} --split {input.split} > {log} 2>&1"

    rule:
        name:
            f"pdudt_evaluate_a_{_id}"
        input:
            features=features_path(_exp),
            split=f"data/splits/{_exp}.safetensors",
            attack=f"artifacts/{_exp}/attack/shadow.safetensors",
            code=PDUDT_CODE,
            models=[pdudt_layout.models_a(_exp, m) for m in _methods],
            costs=[c for m in _methods if (c := pdudt_layout.cost(_exp, m))],
        output:
            [pdudt_layout.result_a(_exp, m) for m in _methods],
        params:
            exp=_exp,
            methods=" ".join(_methods),
            cfg={k: _cfg[k] for k in ("eval", "mia")},
        log:
            f"logs/pdudt/{_exp}/evaluate_a.log",
        benchmark:
            f"logs/benchmarks/pdudt/{_exp}/evaluate_a.tsv"
        threads: THREADS
        resources:
            gpu=GPU,
        shell:
            "{PY} --threads {threads} pdudt-evaluate --exp {params.exp} --methods {params.methods} --checkpoint A "
            "--features {input.features} --split {input.split} --attack {input.attack} > {log} 2>&1"

    rule:
        name:
            f"pdudt_evaluate_{_id}"
        input:
            features=features_path(_exp),
            split=f"data/splits/{_exp}.safetensors",
            attack=f"artifacts/{_exp}/attack/shadow.safetensors",
            code=PDUDT_CODE,
            checkpoint_a=[pdudt_layout.result_a(_exp, m) for m in _methods],
            models=[pdudt_layout.models_b(_exp, m) for m in _continued],
        output:
            [pdudt_layout.result(_exp, m) for m in _methods],
        params:
            exp=_exp,
            methods=" ".join(_methods),
            cfg={k: _cfg[k] for k in ("eval", "mia")},
        log:
            f"logs/pdudt/{_exp}/evaluate.log",
        benchmark:
            f"logs/benchmarks/pdudt/{_exp}/evaluate.tsv"
        threads: THREADS
        resources:
            gpu=GPU,
        shell:
            "{PY} --threads {threads} pdudt-evaluate --exp {params.exp} --methods {params.methods} --checkpoint B "
            "--features {input.features} --split {input.split} --attack {input.attack} > {log} 2>&1"
