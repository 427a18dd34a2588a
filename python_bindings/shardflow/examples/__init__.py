"""shardflow.examples: what TF1 programs import from tensorflow.examples (tutorials.mnist)."""
