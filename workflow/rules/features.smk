# Processed tensors -> features (standardised pixels for the image experiments).


rule features:
    input:
        processed="data/processed/{dataset}.safetensors",
        code=SPINE_CODE,
    output:
        "data/features/{dataset}.safetensors",
    log:
        "logs/features/{dataset}.log",
    benchmark:
        "logs/benchmarks/features/{dataset}.tsv"
    threads: THREADS
    shell:
        "{PY} --threads {threads} features --processed {input.processed} --out {output} > {log} 2>&1"
