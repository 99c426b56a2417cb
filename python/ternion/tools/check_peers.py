"""ternion against the real snnTorch, Norse and Sinabs code: networks built from each framework's
own modules, simulated by the framework, then (1) written by ternion.export and (2) written by
the framework's own NIR exporter and run with --from; prints the spike differences per layer.

Needs snntorch, norse, sinabs, nir and nirtorch importable (PYTHONPATH may point at source
checkouts) and python/ of this repository. Not part of ctest: CI has none of these packages.
Run from the repository root (the binary defaults to build/ternion, relative to the current
directory):
  PYTHONPATH=python:... /usr/bin/python3 -m ternion.tools.check_peers [build/ternion]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings

import h5py
import numpy as np
import torch
import torch.nn as nn

from ternion.tools._peers import ternion_binary

B, T, NI = 8, 50, 20  # samples, steps, inputs


def compat_shims():
    """Compatibility of source checkouts of the frameworks' newest commits with Debian 12's h5py
    and torch; none of this changes what a network computes."""
    import nir

    if not hasattr(nir, 'version'):
        nir.version = '1.0.0'  # set by setuptools_scm in an installed package
    cd = h5py.Group.create_dataset

    def cd2(self, name, shape=None, dtype=None, data=None, **kw):
        if data is None and shape is None and dtype is None:
            return None
        if data is not None and np.ndim(data) == 0:
            kw.pop('compression', None)
            kw.pop('compression_opts', None)
        return cd(self, name, shape, dtype, data, **kw)
    h5py.Group.create_dataset = cd2  # this h5py refuses compression on scalars


def dy(lin, gen, scale=1.0):
    """Dyadic weights (multiples of 1/64) and biases, drawn from `gen`."""
    with torch.no_grad():
        w = torch.rand(lin.weight.shape, generator=gen)
        lin.weight.copy_(torch.round((w * 2 - 1) * scale * 64) / 64)
        if lin.bias is not None:
            b = torch.rand(lin.bias.shape, generator=gen)
            lin.bias.copy_(torch.round((b * 2 - 1) * 16) / 64)
    return lin


class Ternion:
    """`ternion run` of a model on spike trains, its files in a scratch directory."""

    def __init__(self, binary, directory):
        self.binary, self.dir = binary, directory

    def path(self, name):
        return os.path.join(self.dir, name)

    def run(self, model, x, name, *extra):
        """x [B, T, n] spikes -> (ternion's json, its trace's spikes {node: [B, T, n]})"""
        inp, tr = self.path(f'{name}_in.h5'), self.path(f'{name}_tr.h5')
        with h5py.File(inp, 'w') as f:
            f['spikes'] = x.numpy().astype(np.int8)
        p = subprocess.run([self.binary, 'run', model, '--input', inp, '--trace', tr,
                            '--spike-format', 'grid', '--json', '--no-progress', *extra],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        out = {}
        with h5py.File(tr) as f:
            for n, g in f['nodes'].items():
                if 'observables/spikes/data' in g:
                    out[n] = g['observables/spikes/data'][()]
        return json.loads(p.stdout), out


def compare(label, ref, got):
    tot = sum(int(r.sum()) for r in ref.values())
    bad = {k: int((got[k].reshape(ref[k].shape) != ref[k]).sum()) for k in ref}
    print(f'{label}: {tot} spikes compared, differences per layer {bad}')


# ---------------- snnTorch

def snn_net(rm='subtract', delay=True):
    import snntorch as snn

    g = torch.Generator().manual_seed(1)
    kw = dict(init_hidden=True, reset_mechanism=rm, reset_delay=delay)
    return nn.Sequential(
        dy(nn.Linear(NI, 32), g), snn.Leaky(beta=torch.rand(32, generator=g) * 0.2 + 0.75, **kw),
        dy(nn.Linear(32, 24), g), snn.Synaptic(alpha=0.6, beta=0.85, **kw),
        dy(nn.Linear(24, 5), g), snn.Leaky(beta=0.9, threshold=0.5, **kw))


def snn_run(net, x, layers=(1, 3, 5)):
    """The network step by step from fresh hidden states: {str(layer): spikes [B, T, n]}."""
    for m in net.modules():
        if hasattr(m, 'reset_hidden'):
            m.reset_hidden()
    rec = {i: [] for i in layers}
    with torch.no_grad():
        for t in range(T):
            h = x[:, t]
            for i, m in enumerate(net):
                h = m(h)
                if isinstance(h, tuple):  # output=True: (spikes, membrane)
                    h = h[0]
                if i in rec:
                    rec[i].append(h.clone())
    return {str(i): torch.stack(v, 1).numpy() for i, v in rec.items()}


def snn_rnet():
    """snnTorch's recurrent neurons: RLeaky (nn.Linear recurrent map), RLeaky one-to-one (V, zero
    reset), RSynaptic."""
    import snntorch as snn

    g = torch.Generator().manual_seed(5)
    r1 = snn.RLeaky(beta=torch.rand(32, generator=g) * 0.2 + 0.75, linear_features=32,
                    init_hidden=True)
    dy(r1.recurrent, g, 0.5)
    v = torch.round((torch.rand(16, generator=g) * 2 - 1) * 32) / 64
    r2 = snn.RLeaky(beta=0.85, all_to_all=False, V=v, reset_mechanism='zero', threshold=0.5,
                    init_hidden=True)
    r3 = snn.RSynaptic(alpha=0.6, beta=0.85, linear_features=8, init_hidden=True)
    dy(r3.recurrent, g, 0.25)
    return nn.Sequential(dy(nn.Linear(NI, 32), g), r1, dy(nn.Linear(32, 16), g), r2,
                         dy(nn.Linear(16, 8), g), r3)


def check_snntorch(tern, x):
    """snnTorch networks through ternion.export, then through snnTorch's own exporter."""
    import ternion

    for rm, delay in (('subtract', True), ('zero', True), ('subtract', False)):
        net = snn_net(rm, delay)
        ref = snn_run(net, x)
        ternion.export(net, x[:, 0], tern.path('snn.h5'), timesteps=T)
        j, got = tern.run(tern.path('snn.h5'), x, 'snn')
        compare(f'snnTorch ternion.export ({rm}, reset_delay={delay})', ref, got)
    net = snn_rnet()
    ref = snn_run(net, x)
    ternion.export(net, x[:, 0], tern.path('snnr.h5'), timesteps=T)
    j, got = tern.run(tern.path('snnr.h5'), x, 'snnr')
    compare('snnTorch ternion.export (RLeaky linear, RLeaky one-to-one zero reset, RSynaptic)',
            ref, got)
    try:
        check_snntorch_nir(tern, x)
    except Exception as e:
        print('snnTorch export_to_nir failed:', type(e).__name__, str(e)[:300])


def check_snntorch_nir(tern, x):
    """snnTorch's export_to_nir, run with --from snntorch and with --dt 1e-4 alone."""
    import nir
    import snntorch as snn
    from snntorch.export_nir import export_to_nir

    # NIR HEAD vs snnTorch HEAD: type inference disagrees
    nir.NIRGraph.infer_types = lambda self: None
    net = nn.Sequential(dy(nn.Linear(NI, 32), torch.Generator().manual_seed(1)),
                        snn.Leaky(beta=0.85, init_hidden=True),
                        dy(nn.Linear(32, 5), torch.Generator().manual_seed(2)),
                        snn.Leaky(beta=0.9, init_hidden=True, output=True))
    ref = snn_run(net, x, (1, 3))
    g = export_to_nir(net, x[:1, 0])
    path = tern.path('snn_nir.h5')
    nir.write(path, g)
    with h5py.File(path) as f:
        names = list(f['node/nodes'])
    j, got = tern.run(path, x, 'snnnir', '--from', 'snntorch')
    lifs = [n for n in got]
    print('snnTorch export_to_nir nodes', names, 'spiking', lifs)
    compare('snnTorch export_to_nir + --from snntorch',
            {lifs[0]: ref['1'], lifs[1]: ref['3']} if len(lifs) == 2 else {}, got)
    j, got = tern.run(path, x, 'snnnir0', '--dt', '1e-4')
    compare('snnTorch export_to_nir, --dt 1e-4 but no --from',
            {lifs[0]: ref['1'], lifs[1]: ref['3']}, got)


# ---------------- Norse

def norse_layers():
    import norse.torch as norse

    g = torch.Generator().manual_seed(3)
    inv = torch.tensor([100.0, 125.0, 200.0, 250.0])[torch.randint(0, 4, (24,), generator=g)]
    return [
        dy(nn.Linear(NI, 24), g),
        norse.LIFBoxCell(norse.LIFBoxParameters(
            tau_mem_inv=inv, v_leak=torch.tensor(0.25), v_th=torch.tensor(1.0),
            v_reset=torch.tensor(-0.125), method='heaviside')),
        dy(nn.Linear(24, 16), g),
        norse.LIFCell(norse.LIFParameters(
            tau_syn_inv=torch.tensor(200.0), tau_mem_inv=torch.tensor(100.0),
            v_th=torch.tensor(0.25), method='heaviside')),
        dy(nn.Linear(16, 12), g),
        norse.IAFCell(norse.IAFParameters(v_th=torch.tensor(1.0), v_reset=torch.tensor(-0.5),
                                          method='heaviside')),
        dy(nn.Linear(12, 4), g),
        norse.LIBoxCell(norse.LIBoxParameters(tau_mem_inv=torch.tensor(50.0),
                                              v_leak=torch.tensor(0.125)))]


def check_norse(tern, x):
    """Norse cells through ternion.export, then through Norse's own to_nir."""
    import ternion

    layers = norse_layers()
    net = nn.Sequential(*layers)
    states = [None] * len(layers)
    rec = {1: [], 3: [], 5: [], 7: []}
    with torch.no_grad():
        for t in range(T):
            h = x[:, t]
            for i, m in enumerate(layers):
                if i % 2:
                    h, states[i] = m(h, states[i])
                    rec[i].append(h.clone())
                else:
                    h = m(h)
    ref = {str(i): torch.stack(rec[i], 1).numpy() for i in (1, 3, 5)}
    ternion.export(net, x[:, 0], tern.path('norse.h5'), timesteps=T)
    j, got = tern.run(tern.path('norse.h5'), x, 'norse')
    compare('Norse ternion.export (LIFBoxCell, LIFCell, IAFCell)', ref, got)
    print('  Norse LI readout predictions equal:',
          j['predictions'] == torch.stack(rec[7], 1).sum(1).argmax(-1).tolist())
    try:
        check_norse_nir(tern, x, layers)
    except Exception as e:
        print('Norse to_nir failed:', type(e).__name__, str(e)[:300])


def check_norse_nir(tern, x, layers):
    """Norse's to_nir of two of check_norse's Linear layers and two fresh cells, run with
    --from norse and without."""
    import nir
    import norse.torch as norse

    cell = norse.LIFBoxCell(norse.LIFBoxParameters(
        tau_mem_inv=torch.tensor(125.0), v_leak=torch.tensor(0.25), v_th=torch.tensor(1.0),
        v_reset=torch.tensor(-0.125), method='heaviside'))
    cell2 = norse.LIFCell(norse.LIFParameters(
        tau_syn_inv=torch.tensor(200.0), tau_mem_inv=torch.tensor(100.0),
        v_th=torch.tensor(0.25), method='heaviside'))
    st = st2 = None
    rr, rr2 = [], []
    with torch.no_grad():
        for t in range(T):
            z, st = cell(layers[0](x[:, t]), st)
            rr.append(z)
            z2, st2 = cell2(layers[2](z), st2)
            rr2.append(z2)
    ref = [torch.stack(rr, 1).numpy(), torch.stack(rr2, 1).numpy()]
    g2 = norse.to_nir(nn.Sequential(layers[0], cell, layers[2], cell2), type_check=False)
    path = tern.path('norse_nir.h5')
    nir.write(path, g2)
    with h5py.File(path) as f:
        print('Norse to_nir nodes',
              {n: f[f'node/nodes/{n}/type'][()].decode() for n in f['node/nodes']})
    j, got = tern.run(path, x, 'norsenir', '--from', 'norse')
    ks = sorted(got)
    compare('Norse to_nir + --from norse (LIFBoxCell, LIFCell)', dict(zip(ks, ref)), got)
    j, got = tern.run(path, x, 'norsenir0')
    compare('Norse to_nir, no --from', dict(zip(ks, ref)), got)


# ---------------- Sinabs

def check_sinabs(tern, x):
    """Sinabs layers through ternion.export, then through Sinabs' own to_nir."""
    import sinabs.layers as sl
    from sinabs.activation import SingleSpike

    import ternion

    g = torch.Generator().manual_seed(4)
    tau = torch.tensor([4.0, 8.0, 10.0, 20.0])[torch.randint(0, 4, (24,), generator=g)]
    net = nn.Sequential(
        dy(nn.Linear(NI, 24), g),
        sl.LIF(tau_mem=tau, spike_threshold=torch.full((24,), 0.5), spike_fn=SingleSpike),
        dy(nn.Linear(24, 16), g), sl.IAF(spike_threshold=1.0, spike_fn=SingleSpike),
        dy(nn.Linear(16, 5), g), sl.ExpLeak(tau_mem=10.0))
    rec = {}
    hooks = [net[i].register_forward_hook(
        lambda m, a, o, i=i: rec.__setitem__(str(i), o.detach().numpy())) for i in (1, 3, 5)]
    with torch.no_grad():
        out = net(x)  # Sinabs: [B, T, n]
    ternion.export(net, x[:, 0], tern.path('sinabs.h5'), timesteps=T)
    j, got = tern.run(tern.path('sinabs.h5'), x, 'sinabs')
    compare('Sinabs ternion.export (LIF, IAF)', {k: rec[k] for k in ('1', '3')}, got)
    predictions = out.sum(1).argmax(-1).tolist()
    print('  Sinabs ExpLeak readout predictions equal:', j['predictions'] == predictions)
    try:
        for h in hooks:
            h.remove()
        check_sinabs_nir(tern, x, net, [rec['1'], rec['3']], predictions)
    except Exception as e:
        import traceback
        traceback.print_exc()
        print('Sinabs to_nir failed:', type(e).__name__, str(e)[:300])


def check_sinabs_nir(tern, x, net, ref, predictions):
    """Sinabs' to_nir of check_sinabs's network, run with --from sinabs and with the options
    that say the same."""
    import nir
    import sinabs

    for m in net.modules():
        if hasattr(m, 'reset_states'):
            m.reset_states()
    g3 = sinabs.to_nir(net, x[:1, :1])
    path = tern.path('sinabs_nir.h5')
    nir.write(path, g3)
    with h5py.File(path) as f:
        print('Sinabs to_nir nodes',
              {n: f[f'node/nodes/{n}/type'][()].decode() for n in f['node/nodes']})
    j, got = tern.run(path, x, 'sinabsnir', '--from', 'sinabs')
    ks = sorted(got)
    print('  spiking nodes', ks)
    compare('Sinabs to_nir + --from sinabs (LIF, IAF)', dict(zip(ks, ref)), got)
    print('  predictions equal:', j['predictions'] == predictions)
    j, got = tern.run(path, x, 'sinabsnir0', '--dt', '1', '--discretization', 'exact',
                      '--reset', 'subtract')
    compare('Sinabs to_nir, --dt 1 --discretization exact --reset subtract but no --from',
            dict(zip(ks, ref)), got)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m ternion.tools.check_peers",
                                 description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("ternion", nargs="?", default=os.path.join("build", "ternion"),
                    help="the ternion binary (default: build/ternion, relative to the current "
                         "directory)")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the model, input and trace files to DIR and keep them "
                         "(default: a temporary directory, removed at the end)")
    a = ap.parse_args(argv)
    ternion_binary(a.ternion)
    warnings.filterwarnings("ignore")
    compat_shims()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(B, T, NI, generator=gen) < 0.3).float()
    with tempfile.TemporaryDirectory(prefix='ternion-peers-') as d:
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
        tern = Ternion(a.ternion, a.keep or d)
        check_snntorch(tern, x)
        check_norse(tern, x)
        check_sinabs(tern, x)
    return 0


if __name__ == "__main__":
    sys.exit(main())
