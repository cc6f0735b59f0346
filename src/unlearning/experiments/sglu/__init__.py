"""SGLU (Chien et al., 2024): stochastic gradient Langevin unlearning."""
