# Config validation and every input function, in one place.
import os
import shlex
import sys
from pathlib import Path

from snakemake.utils import validate

from unlearning import warm
from unlearning.config import (ParamsError, check_params, experiment_config, experiments, load_params,
                               section_config, setting_experiments)
from unlearning.data.availability import (column_source, features_missing_reason, missing_reason,
                                          user_data_missing_reason)
from unlearning.experiments.pdudt import layout as pdudt_layout
from unlearning.experiments.rrdu.layout import ablation_parts as rrdu_parts
from unlearning.plugins import module_file
from unlearning.resolved import write_resolved
from unlearning.sources import module_files

try:
    for path in workflow.configfiles:  # Snakemake's own YAML loader keeps the last of duplicate keys
        load_params(path)
    validate(config, "../schemas/params.schema.yaml")
    # the registries are read here (every plugin module imported: plugins.py); each configured plugin's block gets
    # its declared defaults, so that every job reads them from the resolved file
    config.update(check_params(config))
except Exception as err:  # one line naming the key, then stop before any job runs
    try:
        check_params(config)
        message = " ".join(str(err).split())[:300]
    except ParamsError as params_err:
        message = str(params_err)
    sys.stderr.write(f"error: {message}\n")
    sys.exit(2)

from unlearning.data.sources import DATASETS
from unlearning.evaluate.attacks.protocol import REFERENCE_ATTACKS
from unlearning.experiments.common_ground import layout as cg_layout
from unlearning.families import FAMILIES
from unlearning.methods import CENTRAL, METHODS



def check_served_size(key, dataset, source, per_client, clients):
    """Stop before any job runs when `per_client x clients` exceeds the training set of the dataset serving a column
    (the MNIST subset holds 4,000 digits where check_params counted MNIST's 60,000)."""
    if source != dataset and per_client is not None and per_client * clients > DATASETS[source].info[2]:
        size = DATASETS[source].info[2]
        sys.stderr.write(f"error: {key}: {per_client} x {clients} clients needs {per_client * clients} training "
                         f"samples, but {source} serves {dataset}'s column with {size}; valid: at most "
                         f"{size // clients}, or torchvision's {dataset} under data.raw_root\n")
        sys.exit(2)


SPINE = experiment_config(config, "spine")
# The configuration Snakemake holds (params.yaml, then --configfile, then --config key=value), written once
# under its content hash: every job reads exactly this file, so it computes what Snakemake planned. In the
# working directory, so that cluster jobs on a shared filesystem see it.
RESOLVED = write_resolved(config, ".snakemake/resolved")
# the Python running Snakemake, through a client that forks each job from a warm interpreter where this run has one
# (unlearning/warm.py: the same computation, without torch's import in every job), else runs it itself
PY = f"{shlex.quote(sys.executable)} -m unlearning.warm --params {RESOLVED}"
PROVENANCE = f"{shlex.quote(sys.executable)} -m unlearning.provenance --params {RESOLVED}"


def cuda_used():
    """Whether jobs will compute on CUDA: device cuda, or auto where torch sees a GPU. torch is asked only where a
    GPU's device file exists (NVIDIA's, or ROCm's /dev/kfd): its import costs every Snakemake start about 2 s."""
    if config["device"] != "auto":
        return config["device"] == "cuda"
    if not (any(Path("/dev").glob("nvidia[0-9]*")) or Path("/dev/kfd").exists()):
        return False
    import torch

    return torch.cuda.is_available()


def auto_threads():
    """engine.cpu_threads: auto = every core Snakemake was given (--cores), else the machine's."""
    try:
        return workflow.cores
    except Exception:  # no --cores (e.g. a cluster run with --jobs only)
        return os.cpu_count() or 1


GPU = 1 if cuda_used() else 0  # the profile caps concurrent GPU jobs with --resources gpu=N
# Steps on small models (CDFL's cells and Figure 1, R2D, RR-DU, the common ground's decentralized jobs) gain little
# from a second thread: under `auto` they take one each, so Snakemake runs them side by side. So does every step at
# scale quick, where a job is seconds of work after its interpreter's start: one thread each, --cores of them at a
# time (on 2 cores the quick run's PDUDT and spine jobs ran one after another at 2 threads, 10 of its 20 minutes),
# and the quick numbers do not depend on --cores. At scale paper the other steps take every core given.
SMALL_THREADS = 1 if config["engine"]["cpu_threads"] == "auto" else config["engine"]["cpu_threads"]
THREADS = (SMALL_THREADS if config["engine"]["cpu_threads"] != "auto" or config["scale"] == "quick"
           else auto_threads())


def drop_job_rate_limit():
    """A local run at Snakemake's default `--max-jobs-per-timespan` (100/1s) runs without the limit. With it, a job
    selection that leaves a job waiting re-runs a second later, and every finished job starts one more such chain of
    re-selections, each of which stats every input of every ready job (snakemake/snakemake#3744): the quick run took
    12 min 46 s with it, its Snakemake process 234 CPU-seconds, and 10 min 48 s without it, 19 (docs/running.md).
    The limit guards a cluster's queue; a cluster run, and a run given another limit, keep it."""
    limit = workflow.scheduling_settings.max_jobs_per_timespan
    scheduler = workflow.scheduler
    if limit is not None and (limit.max_jobs, limit.timespan) == (100, 1) and scheduler.job_rate_limiter is not None:
        scheduler.job_rate_limiter = None


onstart:
    if workflow.local_exec:
        drop_job_rate_limit()
    # a local run on the CPU forks its jobs of SMALL_THREADS threads (every job at quick) from one warm interpreter;
    # not where the steps compute on CUDA, which a process forked after its parent initialised CUDA cannot use
    if workflow.local_exec and not workflow.touch and not GPU:
        warm.start(min(SMALL_THREADS, workflow.cores))


onsuccess:
    warm.stop()


onerror:
    warm.stop()


def code(module):
    """The package's source files that `module` runs (its import closure), as a rule input: editing one
    re-runs exactly the steps that import it (Snakemake's mtime trigger). Relative to the working directory
    where the package lies under it (a checkout), else absolute (`snakemake -d elsewhere`). What a registry imports
    by scanning its package is not in it (sources.py): a rule adds the plugins it runs (`plugin_code`)."""
    here = os.getcwd()
    return [os.path.relpath(p) if p.startswith(here + os.sep) else p for p in module_files(module)]


def plugin_code(registry, names):
    """The files of the modules that declare plugins `names` of `registry` (those it holds): a module of the
    package with its closure, an outside package's module file. Editing one re-runs the jobs that run it; a new
    plugin module re-runs nothing until it is configured."""
    modules = {registry[n].module for n in names if n in registry}
    here = os.getcwd()
    outside = [module_file(m) for m in modules if not m.startswith("unlearning.")]
    return sorted({f for m in modules if m.startswith("unlearning.") for f in code(m)}
                  | {os.path.relpath(p) if p.startswith(here + os.sep) else p for p in outside})


def with_code(*groups):
    return sorted({f for g in groups for f in g})


SPINE_CODE = code("unlearning.experiments.spine.steps")
SGLU_CODE = code("unlearning.experiments.sglu.steps")


TRAINING_KEYS = ("dataset", "model", "mlp_hidden", "clients", "partition", "topology", "train", "forget")


def training_params(exp):
    """The keys that training reads, so that editing an evaluation setting does not retrain."""
    cfg = experiment_config(config, exp)
    return {k: cfg[k] for k in TRAINING_KEYS}


def features_path(exp):
    """The features experiment `exp` trains on: its dataset's, or for PDUDT those of the dataset serving the column
    (data/availability.py column_source: the MNIST subset when torchvision's MNIST is not on disk)."""
    dataset = experiment_config(config, exp)["dataset"]
    if exp.startswith("pdudt"):
        dataset = column_source(dataset, config["data"]["raw_root"], "pdudt")
    return f"data/features/{dataset}.safetensors"


def spine_methods():
    return SPINE["methods"]


def models_of(wildcards):
    if wildcards.method == "original":
        return f"artifacts/{wildcards.exp}/pretrain/models.safetensors"
    return f"artifacts/{wildcards.exp}/unlearn/{wildcards.method}/models.safetensors"


def cost_of(wildcards):
    return models_of(wildcards).replace("models.safetensors", "cost.json")


def spine_results():
    return [f"results/spine/{m}.json" for m in ["original", *spine_methods()]]


def spine_timings():
    return [f"timings/spine/{m}.json" for m in ["original", *spine_methods()]]


# --- PDUDT: datasets on disk run; the others show in the report as missing, with the reason ---
PDUDT = experiment_config(config, "pdudt")
PDUDT_SOURCE = {d: column_source(d, config["data"]["raw_root"], "pdudt") for d in PDUDT["datasets"]}  # as RRDU's
PDUDT_MISSING = {
    d: reason
    for d, src in PDUDT_SOURCE.items()
    if (reason := missing_reason(src, config["data"]["raw_root"], f"data/processed/{src}.safetensors"))
}
PDUDT_EXPS = [f"pdudt_{d}" for d in PDUDT["datasets"] if d not in PDUDT_MISSING]
for _d in PDUDT_EXPS:
    _cfg = experiment_config(config, _d)
    check_served_size(f"pdudt.partition.train_per_client ({_d})", _cfg["dataset"], PDUDT_SOURCE[_cfg["dataset"]],
                      _cfg["partition"]["train_per_client"], _cfg["clients"])
PDUDT_CONTINUED = pdudt_layout.CONTINUED
# FedRecovery is judged against its own original, the FedAvg server's global model before the removal
def pdudt_evaluated(exp):
    """What experiment `exp` evaluates: its own methods (a `by_dataset` or candidate override may change them)."""
    return pdudt_layout.evaluated(experiment_config(config, exp)["methods"])


# PDUDT's training steps (the baselines' own runs, the unlearning variants, the subsequent rounds) run every method of
# an experiment in one job at scale quick, where each is seconds of work after a job's 2.5 s start (issue 40); at
# scale paper one job per method, tens of minutes each, so that they run side by side on a cluster and a crash
# loses one method's work. The evaluations run per experiment at both scales (the attack is fitted once).
PDUDT_ONE_JOB = config["scale"] == "quick"


def pdudt_job_groups(methods):
    """[(methods of one job, its rule-name suffix)]: all in one at quick, one each at paper; none for no method."""
    if not methods:
        return []
    return [(list(methods), "")] if PDUDT_ONE_JOB else [([m], f"_{m}") for m in methods]


def pdudt_trained_files(exp, method):
    """What an unlearning method starts from (layout.trained_dir): its models, and the history it replays."""
    directory = pdudt_layout.trained_dir(exp, method)
    extra = [] if method == "perturbed_retrain" else [f"{directory}/history"]
    return [f"{directory}/models.safetensors", *extra]


def pdudt_method_params(exp, method):
    cfg = experiment_config(config, exp)
    return {"sigmas": cfg["sigmas"], **cfg.get(method, {})}


def pdudt_results():
    return [f"results/{e}/{m}.json" for e in PDUDT_EXPS for m in pdudt_evaluated(e)]


def pdudt_curves():
    return [f"artifacts/{e}/subsequent/{m}/curve.json" for e in PDUDT_EXPS for m in pdudt_evaluated(e)
            if m in PDUDT_CONTINUED]


def pdudt_timing_tables():
    return [f"timings/{e}/table2.json" for e in PDUDT_EXPS]


def pdudt_gap_files():
    """The default experiments' and the candidates' that retrain (the gaps step compares PDUDT's correction of the
    stored gradient history with retraining, and measures the target's gradient norms)."""
    candidates = [e for e in PDUDT_SETTING_EXPS if "retrain" in experiment_config(config, e)["methods"]]
    return [f"results/{e}/gaps.json" for e in [*PDUDT_EXPS, *candidates]]


# issue 15's candidate settings (pdudt.settings): Origin, Retrain, PDUDT and PDUDT (ES) of each, beside the default's
PDUDT_SETTING_EXPS = [e for e in setting_experiments(config, "pdudt")
                      if experiment_config(config, e)["dataset"] not in PDUDT_MISSING]
PDUDT_SETTING_METHODS = pdudt_layout.SETTING_METHODS
# the steps' code and that of the registered methods they run (the others, perturbed retraining and the originals,
# are the steps' own)
PDUDT_CODE = with_code(code("unlearning.experiments.pdudt.steps"),
                       plugin_code(METHODS, {m for e in [*PDUDT_EXPS, *PDUDT_SETTING_EXPS]
                                             for m in experiment_config(config, e)["methods"]}))


def pdudt_setting_results():
    """What the settings table and Figure 1's pretrained start read: the default experiments' Origin, Retrain,
    PDUDT and PDUDT (ES), and every method of every candidate."""
    out = [f"results/{e}/{m}.json" for e in PDUDT_EXPS for m in PDUDT_SETTING_METHODS if m in pdudt_evaluated(e)]
    for e in PDUDT_SETTING_EXPS:
        out += [f"results/{e}/{m}.json" for m in ["original", *experiment_config(config, e)["methods"]]]
    return out


def pdudt_missing_args():
    if not PDUDT_MISSING:
        return ""
    return "--missing " + " ".join(shlex.quote(f"{d}={r}") for d, r in PDUDT_MISSING.items())


# --- SGLU: every dataset gets the data-free accounting; the datasets on disk also train (Figures 3a, 3c) ---
SGLU = section_config(config, "sglu")
SGLU_SOURCE = {d: column_source(d, config["data"]["raw_root"], "sglu") for d in SGLU["datasets"]}  # as RRDU_SOURCE
SGLU_MISSING = {d: reason for d, src in SGLU_SOURCE.items()
                if (reason := features_missing_reason(src, SGLU["extractors"][d], config["data"]["raw_root"],
                                                      f"data/sglu/{d}.safetensors"))}
SGLU_TRAINED = [d for d in SGLU["datasets"] if d not in SGLU_MISSING]
# columns trained on a subset of the paper's data: Table 3 and Figures 3b/3d keep the paper's n (no features), the
# runs take their sigmas and K from the subset's own accounting (accounting_subset.json)
SGLU_SUBSET = [d for d in SGLU_TRAINED if SGLU_SOURCE[d] != d]
SGLU_ACCOUNTING_PARAMS = {k: SGLU[k] for k in ("lam_per_n", "clip", "radius", "burn_in", "table3", "fig3a", "fig3b",
                                               "fig3d", "baselines", "accounting", "truncate_to")}


def sglu_feature_params(dataset):
    return {k: SGLU[k][dataset] for k in ("pairs", "extractors")} | {"truncate_to": SGLU["truncate_to"]}


def sglu_processed(wildcards):
    """The processed file of the dataset serving SGLU's column `wildcards.dataset` (SGLU_SOURCE)."""
    return f"data/processed/{SGLU_SOURCE.get(wildcards.dataset, wildcards.dataset)}.safetensors"


def sglu_accounting_features(dataset):
    """The features Table 3's accounting reads: none for a column at the paper's n (MNIST offline or on a subset)."""
    return [f"data/sglu/{dataset}.safetensors"] if dataset in SGLU_TRAINED and dataset not in SGLU_SUBSET else []


def sglu_features_option(dataset):
    return "".join(f"--features {f}" for f in sglu_accounting_features(dataset))


def sglu_run_accounting(wc):
    """The accounting a run takes its sigmas and K from: the subset's own where one serves the column."""
    return f"results/sglu/{wc.dataset}/accounting{'_subset' if wc.dataset in SGLU_SUBSET else ''}.json"


def sglu_run_params(figure):
    keys = ("trials", "partitions", "burn_in", figure, "baselines", "accounting", "fig3d" if figure == "fig3c" else "table3")
    return {k: SGLU[k] for k in keys}


def sglu_missing_args():
    if not SGLU_MISSING:
        return ""
    return "--missing " + " ".join(shlex.quote(f"{d}={r}") for d, r in SGLU_MISSING.items())


# --- Common ground: the centralized setting runs on SGLU's features of its dataset, or shows as missing ---
COMMON = section_config(config, "common")
COMMON_DATASET = COMMON["centralized"]["dataset"]
COMMON_MISSING = SGLU_MISSING.get(COMMON_DATASET)
# the centralized tables (experiments/common_ground/central.py): one job per (table, method), one per table putting
# them together; a method's job reads the task and its own block, its code is its bench's and its runner's module
CENTRAL_TABLES = {"centralized": ("centralized", "convex", "centralized"), "centralized_mlp": ("mlp", "mlp", "mlp")}


def central_methods(table):
    return COMMON[CENTRAL_TABLES[table][0]]["methods"]


def central_method_code(table, method):
    return with_code(code("unlearning.experiments.common_ground.central"),
                     code(f"unlearning.experiments.common_ground.{CENTRAL_TABLES[table][2]}"),
                     plugin_code(CENTRAL, [(method, CENTRAL_TABLES[table][1])]))


def central_combine_code(table):
    """The put-together's: the MLP's also reads the convex methods' declarations (why they do not run on the MLP)."""
    runs = [(m, "convex") for m in COMMON["centralized"]["methods"]] if table == "centralized_mlp" else []
    return with_code(code("unlearning.experiments.common_ground.central"), plugin_code(CENTRAL, runs))


def central_method_params(table, method):
    """What a method's job reads: the budget, the task's keys of common.centralized (not the other runners' blocks,
    not the lists of methods), its own block, SGLU's constants, and for the MLP its block."""
    key = CENTRAL[(method, CENTRAL_TABLES[table][1])].params_key
    blocks = {info.params_key for info in CENTRAL.all().values()} - {None}
    central = {k: v for k, v in COMMON["centralized"].items() if k != "methods" and (k not in blocks or k == key)}
    mlp = {k: v for k, v in COMMON["mlp"].items() if k != "methods"} if table == "centralized_mlp" else None
    return {"common": {"budget": COMMON["budget"], "centralized": central, "mlp": mlp},
            "sglu": {k: SGLU[k] for k in ("lam_per_n", "clip", "radius")}}


# the decentralized settings, on the standardised pixels of their dataset, as small jobs (experiments/common_ground/
# parts.py, its files layout.py): the attack's references per (setting, seed); each original per (setting, seed,
# training family); each method per (setting, method), every seed; each setting put together. A job's params are
# what it reads (layout.py) and its code the files it runs: a method job imports its own method module and no other.
COMMON_DEC = COMMON["decentralized"]
COMMON_DEC_MISSING = missing_reason(COMMON_DEC["dataset"], config["data"]["raw_root"],
                                    f"data/processed/{COMMON_DEC['dataset']}.safetensors")
COMMON_SETTINGS = [] if COMMON_DEC_MISSING else list(cg_layout.SETTINGS)
COMMON_DEC_RUNS = [f"{s}_s{seed}" for s in COMMON_SETTINGS for seed in COMMON_DEC["seeds"]]
COMMON_DEC_FEATURES = f"data/features/{COMMON_DEC['dataset']}.safetensors"
# the judge runs the configured attacks (attack.scores): their modules are inputs, the other attacks' are not
ATTACK_CODE = plugin_code(REFERENCE_ATTACKS, COMMON_DEC["attack"].get("scores", ["rmia", "lira"]))
COMMON_PART_CODE = with_code(code("unlearning.experiments.common_ground.parts"), ATTACK_CODE)
# the reference-count study (client setting, first seed): what it reads, so that a method's block does not re-run it
COMMON_REFERENCES = [] if COMMON_DEC_MISSING else [
    f"results/common_ground/references_client_s{COMMON_DEC['seeds'][0]}.json"]
COMMON_REF_PARAMS = cg_layout.task_params(COMMON_DEC, "client")
# the canary audits (experiments/common_ground/canary.py): one per (setting, method taking the common budget), where
# common.decentralized.canary configures them (a params file without the block, an older record's, runs none)
COMMON_CANARY = [cg_layout.canary(s, m) for s in COMMON_SETTINGS if "canary" in COMMON_DEC
                 for m in cg_layout.audited(COMMON_DEC, s)]
COMMON_REF_CODE = with_code(code("unlearning.experiments.common_ground.decentralized"),
                            plugin_code(FAMILIES, ["dsgd"]), ATTACK_CODE)


def common_method_code(method):
    """The parts' code and the method's own files (an outside package's module file, or the package's closure)."""
    return with_code(COMMON_PART_CODE, plugin_code(METHODS, [method]))


def common_canary_code(method):
    """The canary audit's code: the method's job's and its family's, with the audit's own module."""
    return with_code(common_method_code(method), common_family_code(METHODS[method].original),
                     code("unlearning.experiments.common_ground.canary"))


def common_family_code(family):
    return with_code(COMMON_PART_CODE, plugin_code(FAMILIES, [family]))


def common_method_inputs(wc):
    family = METHODS[wc.method].original
    return {"references": [cg_layout.references(wc.setting, s) for s in COMMON_DEC["seeds"]],
            "originals": [cg_layout.family_dir(wc.setting, s, family) for s in COMMON_DEC["seeds"]]}


def common_combine_inputs(wc):
    methods, seeds = COMMON_DEC[wc.setting]["methods"], COMMON_DEC["seeds"]
    families = cg_layout.families_of(methods)
    return {"references": [cg_layout.references(wc.setting, s) for s in seeds],
            "originals": [f(wc.setting, s, fam) for s in seeds for fam in families
                          for f in (cg_layout.original, cg_layout.original_timing)],
            "methods": [f(wc.setting, m) for m in methods for f in (cg_layout.method, cg_layout.method_timing)]}


def common_combine_params(setting):
    """A put-together reads its setting's methods and names why the other setting's that do not apply here do not."""
    return {"methods": COMMON_DEC[setting]["methods"], "not_applying": cg_layout.not_applying(COMMON_DEC, setting),
            "seeds": COMMON_DEC["seeds"], "budget": COMMON["budget"]}


def common_combine_code(wc):
    """The parts' code and the declarations of the methods it names as not applying (their labels and why)."""
    return with_code(COMMON_PART_CODE, plugin_code(METHODS, cg_layout.not_applying(COMMON_DEC, wc.setting)))


def common_decentralized_results():
    return [cg_layout.result(s, seed) for s in COMMON_SETTINGS for seed in COMMON_DEC["seeds"]]


def common_decentralized_scores():
    """Every judged model's RMIA scores (so that TPR at any FPR can be recomputed); built with the results."""
    return [cg_layout.scores(s, seed) for s in COMMON_SETTINGS for seed in COMMON_DEC["seeds"]]


def common_decentralized_timings():
    return [cg_layout.timing(s, seed) for s in COMMON_SETTINGS for seed in COMMON_DEC["seeds"]]


def common_ground_report_args():
    missing = {}
    if COMMON_MISSING:
        missing["centralized"] = COMMON_MISSING
    if COMMON_DEC_MISSING:
        missing["decentralized"] = COMMON_DEC_MISSING
    args = "" if COMMON_MISSING else ("--centralized results/common_ground/centralized.json "
                                      "--timing timings/common_ground/centralized.json "
                                      "--mlp results/common_ground/centralized_mlp.json "
                                      "--mlp-timing timings/common_ground/centralized_mlp.json")
    if COMMON_DEC_RUNS:
        args += " --decentralized " + " ".join(common_decentralized_results())
        args += " --decentralized-timings " + " ".join(common_decentralized_timings())
    if COMMON_REFERENCES:
        args += " --references " + COMMON_REFERENCES[0]
    if COMMON_CANARY:
        args += " --canary " + " ".join(COMMON_CANARY)
    if missing:
        args += " --missing " + " ".join(shlex.quote(f"{k}={v}") for k, v in missing.items())
    return args.strip()


# --- CDFL: one cell per (dataset on disk, partition, topology, seed); the others show as missing ---
CDFL = section_config(config, "cdfl")
CDFL_CODE = code("unlearning.experiments.cdfl.steps")
CDFL_SOURCE = {d: column_source(d, config["data"]["raw_root"], "cdfl") for d in CDFL["datasets"]}  # as RRDU_SOURCE
CDFL_MISSING = {
    d: reason
    for d, src in CDFL_SOURCE.items()
    if (reason := missing_reason(src, config["data"]["raw_root"], f"data/processed/{src}.safetensors"))
}
CDFL_RUN = [d for d in CDFL["datasets"] if d not in CDFL_MISSING]
for _d in CDFL_RUN:
    check_served_size("cdfl.partition.train_per_client", _d, CDFL_SOURCE[_d], CDFL["partition"]["train_per_client"],
                      CDFL["clients"])
CDFL_CELLS = [f"{d}/{p}_{t}_s{s}" for d in CDFL_RUN for p in CDFL["partition"]["kinds"]
              for t in CDFL["topology"]["kinds"] for s in CDFL["seeds"]]


def cdfl_features(wildcards):
    """The features of the dataset serving CDFL's column `wildcards.dataset` (CDFL_SOURCE)."""
    return f"data/features/{CDFL_SOURCE.get(wildcards.dataset, wildcards.dataset)}.safetensors"


def cdfl_cell_params(dataset):
    """What a cell reads: its model and every training, unlearning and evaluation setting."""
    return {"model": CDFL["models"][dataset],
            **{k: CDFL[k] for k in ("clients", "partition", "topology", "train", "unlearn", "eval", "seeds")}}


def cdfl_results():
    return [f"results/cdfl/{c}.json" for c in CDFL_CELLS]


def cdfl_timings():
    return [f"timings/cdfl/{c}.json" for c in CDFL_CELLS]


def cdfl_convex_params():
    """What the convex stand-in reads (its lambdas, size and image side; the clients and deletion fraction; the
    training settings of its paper-regime block)."""
    return {"convex": CDFL["convex"], "clients": CDFL["clients"],
            "sample_fraction": CDFL["unlearn"]["sample_fraction"], "train": CDFL["train"]}


def cdfl_convex_results():
    """The convex stand-in's result when its dataset is on disk (else the report shows it as missing)."""
    d = CDFL["convex"]["dataset"]
    if missing_reason(d, config["data"]["raw_root"], f"data/processed/{d}.safetensors"):
        return []
    return [f"results/cdfl/{d}/convex.json"]


def cdfl_figure1_params(dataset):
    """What Figure 1 reads: a cell's settings and its window."""
    return {**cdfl_cell_params(dataset), "figure1": CDFL["figure1"]}


def cdfl_figure1_results():
    """Figure 1's results, one per dataset on disk (the others show as missing in the report)."""
    return [f"results/cdfl/{d}/figure1.json" for d in CDFL_RUN]


def cdfl_calibration_results():
    """The optimizer and K calibration (note 8), one per dataset on disk, where the scale asks for it."""
    if not CDFL.get("calibration"):
        return []
    return [f"results/cdfl/{d}/calibration.json" for d in CDFL_RUN]


def cdfl_timing_results():
    """DU's and RT's time on synthetic inputs (experiments/cdfl/timing.py) for each dataset of
    cdfl.synthetic_timing.datasets that is missing (one on disk has its real cells' times)."""
    return [f"results/cdfl/{d}/timing_synthetic.json" for d in CDFL["synthetic_timing"]["datasets"]
            if d in CDFL_MISSING]


def cdfl_missing_args():
    if not CDFL_MISSING:
        return ""
    return "--missing " + " ".join(shlex.quote(f"{d}={r}") for d, r in CDFL_MISSING.items())


# --- R2D: the stand-ins always run; eICU and Lacuna-100 when their processed files are on disk, else missing ---
R2D = section_config(config, "r2d")
R2D_MISSING = {d: reason for d in R2D["datasets"] if (reason := user_data_missing_reason(d, R2D))}
R2D_RUN = [d for d in R2D["datasets"] if d not in R2D_MISSING]
R2D_CODE = code("unlearning.experiments.r2d.steps")
# the report's CSV tables (experiments/r2d/report.py TABLES); timing.csv holds wall times, the others are deterministic
R2D_TABLES = ("accounting", "fig1c", "figure1", "table5", "tables8_9", "retrain_noised", "timing", "claims")


def r2d_processed(dataset):
    """The processed image tensors an image stand-in is built from ([] for the others)."""
    entry = R2D["stand_ins"].get(dataset, {})
    return [f"data/processed/{entry['source']}.safetensors"] if entry.get("kind") == "images" else []


def r2d_processed_option(dataset):
    return " ".join(f"--processed {p}" for p in r2d_processed(dataset))


def r2d_run_params(dataset):
    """What a run reads: its data set's entry and every learning, noise and evaluation setting."""
    keys = ("val_frac", "model", "train", "estimate", "noise", "rewind", "epsilons", "table_epsilons", "mia")
    entry = R2D["stand_ins"].get(dataset) or R2D["real"].get(dataset)
    return {"dataset": entry, **{k: R2D[k] for k in keys}}


def r2d_baselines_params(dataset):
    return {**r2d_run_params(dataset), "hf": R2D["hf"], "cns": R2D["cns"]}


def r2d_results():
    return [f"results/r2d/{d}/s{s}.json" for d in R2D_RUN for s in R2D["seeds"]]


def r2d_baseline_results():
    return [f"results/r2d/{d}/baselines.json" for d in R2D_RUN]


def r2d_baseline_run(wc):
    return f"results/r2d/{wc.dataset}/s{R2D['baseline_seed']}.json"


def r2d_timings():
    return [f"timings/r2d/{d}/s{s}.json" for d in R2D_RUN for s in R2D["seeds"]] + \
        [f"timings/r2d/{d}/baselines.json" for d in R2D_RUN]


def r2d_missing_args():
    if not R2D_MISSING:
        return ""
    return "--missing " + " ".join(shlex.quote(f"{d}={r}") for d, r in R2D_MISSING.items())


# --- RR-DU: per dataset on disk, one job per seed and four for the ablations; the others show as missing ---
RRDU = section_config(config, "rrdu")
RRDU_CODE = code("unlearning.experiments.rrdu.steps")
# the dataset serving each column: MNIST's own files, else the 5,000-digit subset (data/availability.py)
RRDU_SOURCE = {d: column_source(d, config["data"]["raw_root"], "rrdu") for d in RRDU["datasets"]}
RRDU_MISSING = {
    d: reason
    for d, src in RRDU_SOURCE.items()
    if (reason := missing_reason(src, config["data"]["raw_root"], f"data/processed/{src}.safetensors"))
}
RRDU_RUN = [d for d in RRDU["datasets"] if d not in RRDU_MISSING]
for _d in RRDU_RUN:
    check_served_size("rrdu.train_per_client", _d, RRDU_SOURCE[_d], RRDU["train_per_client"], RRDU["clients"])
RRDU_TABLES = ("table3", "table14", "table15", "table16", "table17", "figure1", "claims", "cost", "certificate")


def rrdu_processed(wildcards):
    """The processed file of the dataset serving RR-DU's column `wildcards.dataset` (RRDU_SOURCE)."""
    return f"data/processed/{RRDU_SOURCE.get(wildcards.dataset, wildcards.dataset)}.safetensors"


def rrdu_params(dataset):
    """What an RR-DU job reads: the dataset's settings and every training, unlearning and evaluation key."""
    return {"dataset": RRDU["datasets"][dataset], **{k: v for k, v in RRDU.items() if k != "datasets"}}


def rrdu_seed_results():
    return [f"results/rrdu/{d}/seed{s}.json" for d in RRDU_RUN for s in RRDU["seeds"]]


def rrdu_ablation_results():
    return [f"results/rrdu/{d}/ablations.json" for d in RRDU_RUN]


def rrdu_ablation_parts(dataset, kind):
    """The ablation parts' results or timings for one dataset (rule rrdu_ablation_part)."""
    return [f"{kind}/rrdu/{dataset}/ablations/{p}.json" for p in rrdu_parts(RRDU)]


def rrdu_timings():
    return [f"timings/rrdu/{d}/{n}.json" for d in RRDU_RUN for n in [*(f"seed{s}" for s in RRDU["seeds"]),
                                                                     "ablations"]]


def rrdu_missing_args():
    if not RRDU_MISSING:
        return ""
    return "--missing " + " ".join(shlex.quote(f"{d}={r}") for d, r in RRDU_MISSING.items())
