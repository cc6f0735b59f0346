# Config validation and every input function, in one place.
import shlex
import sys

from snakemake.utils import validate

from unlearning.config import ParamsError, check_params, experiment_config

try:
    validate(config, "../schemas/params.schema.yaml")
    check_params(config)
except Exception as err:  # one line naming the key, then stop before any job runs
    try:
        check_params(config)
        message = " ".join(str(err).split())[:300]
    except ParamsError as params_err:
        message = str(params_err)
    sys.stderr.write(f"error: {message}\n")
    sys.exit(2)

SPINE = experiment_config(config, "spine")
PY = f"{shlex.quote(sys.executable)} -m unlearning --params params.yaml"  # the Python running Snakemake
GPU = 1 if config["scale"] == "paper" and config["device"] != "cpu" else 0
THREADS = config["engine"]["cpu_threads"]


def features_path(exp):
    return f"data/features/{experiment_config(config, exp)['dataset']}.safetensors"


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
