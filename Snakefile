# Rebuilds every table and figure: `snakemake --cores all` (scale from params.yaml, default quick).
# Rules are thin: each calls one step of `python -m unlearning`; see workflow/rules/*.smk.

configfile: "params.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/pretrain.smk"
include: "workflow/rules/unlearn.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/pdudt.smk"
include: "workflow/rules/sglu.smk"
include: "workflow/rules/common_ground.smk"
include: "workflow/rules/cdfl.smk"
include: "workflow/rules/r2d.smk"
include: "workflow/rules/rrdu.smk"


wildcard_constraints:
    exp="[^/]+",


rule all:
    input:
        "reports/index.md",
        "reports/index.html",
        "reports/spine/metrics.csv",
        "reports/pdudt/index.md",
        "reports/sglu/index.md",
        "reports/cdfl/index.md",
        "reports/r2d/index.md",
        "reports/rrdu/index.md",
        "reports/common_ground/index.md",
    default_target: True


# Targets of the DVC stages (dvc.yaml): `data` = processed tensors and features of every dataset a step
# trains on; `experiments` = everything the reports read. Snakemake decides within each what is out of date.
localrules:
    all,
    data,
    experiments,


rule data:
    input:
        sorted({features_path(e) for e in ["spine", *PDUDT_EXPS]}
               | {f"data/features/{CDFL_SOURCE[d]}.safetensors" for d in CDFL_RUN}),
        [f"data/processed/{SGLU_SOURCE[d]}.safetensors" for d in SGLU_TRAINED],
        [f"data/processed/{RRDU_SOURCE[d]}.safetensors" for d in RRDU_RUN],  # the datasets serving the columns


rule experiments:
    input:
        rules.report.input,
        rules.pdudt_report.input,
        rules.sglu_report.input,
        rules.cdfl_report.input,
        rules.r2d_report.input,
        rules.rrdu_report.input,
        rules.common_ground_report.input,
