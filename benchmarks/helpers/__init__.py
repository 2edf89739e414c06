"""What the benchmarks share: real fields (``fields``, ``fetch_data``), paired timing (``paired``), a local S3
server (``s3local``), the pseudo-terminal runner (``terminal``), long jobs in CPU-lock holds (``held``)."""
