"""PyTorch reference models of this repository (need Debian's python3-torch): `spikformer`,
the small spiking Transformers the bundled BSA/SSA models were trained with; `bsa`, Bipolar
Self-attention as a drop-in for a backbone's self-attention (swap_attention)."""
