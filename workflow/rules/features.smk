# Processed tensors -> features (standardised pixels for the image experiments).


rule features:
    input:
        "data/processed/{dataset}.safetensors",
    output:
        "data/features/{dataset}.safetensors",
    log:
        "logs/features/{dataset}.log",
    benchmark:
        "logs/benchmarks/features/{dataset}.tsv"
    threads: THREADS
    shell:
        "{PY} features --processed {input} --out {output} > {log} 2>&1"
