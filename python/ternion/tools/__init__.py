"""ternion's Python tools, run as modules of the package with Debian's /usr/bin/python3 (the first
python3 on PATH may be another interpreter). From the repository root, with the source tree's
package on PYTHONPATH (PYTHONPATH=build/python, the build tree's copy, works as well):

    PYTHONPATH=python /usr/bin/python3 -m ternion.tools.NAME --help

train_spikformer
    Trains the bundled spiking Transformers (BSA and SSA, on sklearn's digits or Fashion-MNIST)
    and writes their model files and PyTorch's reference (accuracy, predictions, spike counts)
    to --out, default models/bundled:
        PYTHONPATH=python nice /usr/bin/python3 -m ternion.tools.train_spikformer \\
            --data fashion-mnist --kinds bsa --stem 32 --dim 96 --heads 3 --epochs 12 \\
            --threads 1 --seed 0 --linear blas
check_peers
    ternion against snnTorch, Norse and Sinabs (their modules, and their own NIR exporters);
    needs those packages, nir and nirtorch on PYTHONPATH:
        PYTHONPATH=python:... /usr/bin/python3 -m ternion.tools.check_peers [build/ternion]
check_syops
    ternion's `--count syops` against syops-counter (with SpikingJelly 0.0.0.0.12):
        PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_syops \\
            --syops ~/src/syops-counter --spikingjelly ~/src/spikingjelly-0.0.0.0.12
check_neurobench
    ternion's `--count neurobench` against NeuroBench (with snnTorch):
        PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_neurobench \\
            --neurobench ~/src/neurobench --snntorch ~/src/snntorch
check_lemaire
    ternion's `--count lemaire --profile lemaire` against SpikingJelly's estimate_lemaire_energy:
        PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_lemaire \\
            --spikingjelly ~/src/spikingjelly --ternion build/ternion
check_sdt_v3
    ternion against the official Spike-driven Transformer V3 (integer MultiSpike neurons); needs
    a checkout of BICLab/Spike-Driven-Transformer-V3:
        PYTHONPATH=python /usr/bin/python3 -m ternion.tools.check_sdt_v3 \\
            --official ~/src/Spike-Driven-Transformer-V3 [build/ternion]

Paths into the source tree (build/ternion, models/bundled) are defaults relative to the current
directory, so run the tools from the repository root or pass them as options. The checks
are local: not part of ctest, since their peer frameworks are not Debian packages. Each tool is a
module with a main(argv=None); importing one runs nothing.
"""
