#!/usr/bin/env python3
"""ternion against the real snnTorch, Norse and Sinabs code: networks built from each framework's
own modules, simulated by the framework, then (1) written by ternion.export and (2) written by
the framework's own NIR exporter and run with --from; prints the spike differences per layer.

Needs snntorch, norse, sinabs, nir and nirtorch importable (PYTHONPATH may point at source
checkouts) and python/ of this repository. Not part of ctest: CI has none of these packages.
  PYTHONPATH=python:... /usr/bin/python3 tools/check_peers.py build/ternion"""
import sys, json, subprocess, tempfile, warnings
warnings.filterwarnings("ignore")
import numpy as np, torch, torch.nn as nn, h5py
import ternion
import nir
# Compatibility for source checkouts of the frameworks' newest commits with Debian 12's h5py
# and torch; none of this changes what a network computes.
if not hasattr(nir, 'version'):
    nir.version = '1.0.0'  # set by setuptools_scm in an installed package
_cd = h5py.Group.create_dataset
def _cd2(self, name, shape=None, dtype=None, data=None, **kw):
    if data is None and shape is None and dtype is None:
        return None
    if data is not None and np.ndim(data) == 0:
        kw.pop('compression', None); kw.pop('compression_opts', None)
    return _cd(self, name, shape, dtype, data, **kw)
h5py.Group.create_dataset = _cd2  # this h5py refuses compression on scalars
torch.set_num_threads(1)
TERN = sys.argv[1] if len(sys.argv) > 1 else 'build/ternion'
D = tempfile.mkdtemp(prefix='ternion-peers-')

def dy(lin, gen, scale=1.0):
    with torch.no_grad():
        lin.weight.copy_(torch.round((torch.rand(lin.weight.shape, generator=gen) * 2 - 1) * scale * 64) / 64)
        if lin.bias is not None:
            lin.bias.copy_(torch.round((torch.rand(lin.bias.shape, generator=gen) * 2 - 1) * 16) / 64)
    return lin

def tern(model, x, name, *extra):
    """x [B, T, n] spikes -> ternion trace spikes {node: [B, T, n]} and json"""
    inp, tr = f'{D}/{name}_in.h5', f'{D}/{name}_tr.h5'
    with h5py.File(inp, 'w') as f:
        f['spikes'] = x.numpy().astype(np.int8)
    p = subprocess.run([TERN, 'run', model, '--input', inp, '--trace', tr, '--spike-format', 'grid', '--json', '--no-progress', *extra], capture_output=True, text=True)
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

gen = torch.Generator().manual_seed(0)
B, T, NI = 8, 50, 20
x = (torch.rand(B, T, NI, generator=gen) < 0.3).float()

# ---------------- snnTorch
import snntorch as snn
def snn_net(rm='subtract', delay=True):
    g = torch.Generator().manual_seed(1)
    return nn.Sequential(dy(nn.Linear(NI, 32), g), snn.Leaky(beta=torch.rand(32, generator=g) * 0.2 + 0.75, init_hidden=True, reset_mechanism=rm, reset_delay=delay),
                         dy(nn.Linear(32, 24), g), snn.Synaptic(alpha=0.6, beta=0.85, init_hidden=True, reset_mechanism=rm, reset_delay=delay),
                         dy(nn.Linear(24, 5), g), snn.Leaky(beta=0.9, threshold=0.5, init_hidden=True, reset_mechanism=rm, reset_delay=delay))
def snn_run(net):
    for m in net.modules():
        if hasattr(m, 'reset_hidden'): m.reset_hidden()
    rec = {i: [] for i in (1, 3, 5)}
    with torch.no_grad():
        for t in range(T):
            h = x[:, t]
            for i, m in enumerate(net):
                h = m(h)
                if i in rec: rec[i].append(h.clone())
    return {str(i): torch.stack(v, 1).numpy() for i, v in rec.items()}
for rm, delay in (('subtract', True), ('zero', True), ('subtract', False)):
    net = snn_net(rm, delay)
    ref = snn_run(net)
    ternion.export(net, x[:, 0], f'{D}/snn.h5', timesteps=T)
    net = snn_net(rm, delay)
    j, got = tern(f'{D}/snn.h5', x, 'snn')
    compare(f'snnTorch ternion.export ({rm}, reset_delay={delay})', ref, got)
# snnTorch's recurrent neurons through ternion.export: RLeaky (nn.Linear recurrent map),
# RLeaky one-to-one (V, zero reset), RSynaptic
def snn_rnet():
    g = torch.Generator().manual_seed(5)
    r1 = snn.RLeaky(beta=torch.rand(32, generator=g) * 0.2 + 0.75, linear_features=32, init_hidden=True)
    dy(r1.recurrent, g, 0.5)
    v = torch.round((torch.rand(16, generator=g) * 2 - 1) * 32) / 64
    r2 = snn.RLeaky(beta=0.85, all_to_all=False, V=v, reset_mechanism='zero', threshold=0.5, init_hidden=True)
    r3 = snn.RSynaptic(alpha=0.6, beta=0.85, linear_features=8, init_hidden=True)
    dy(r3.recurrent, g, 0.25)
    return nn.Sequential(dy(nn.Linear(NI, 32), g), r1, dy(nn.Linear(32, 16), g), r2, dy(nn.Linear(16, 8), g), r3)
net = snn_rnet()
ref = snn_run(net)
ternion.export(net, x[:, 0], f'{D}/snnr.h5', timesteps=T)
j, got = tern(f'{D}/snnr.h5', x, 'snnr')
compare('snnTorch ternion.export (RLeaky linear, RLeaky one-to-one zero reset, RSynaptic)', ref, got)
# snnTorch's own exporter
try:
    from snntorch.export_nir import export_to_nir
    import nir
    nir.NIRGraph.infer_types = lambda self: None  # NIR HEAD vs snnTorch HEAD: type inference disagrees
    net = nn.Sequential(dy(nn.Linear(NI, 32), torch.Generator().manual_seed(1)), snn.Leaky(beta=0.85, init_hidden=True),
                        dy(nn.Linear(32, 5), torch.Generator().manual_seed(2)), snn.Leaky(beta=0.9, init_hidden=True, output=True))
    for m in net.modules():
        if hasattr(m, 'reset_hidden'): m.reset_hidden()
    rec = {1: [], 3: []}
    with torch.no_grad():
        for t in range(T):
            h = x[:, t]
            for i, m in enumerate(net):
                h = m(h)
                if isinstance(h, tuple): h = h[0]
                if i in rec: rec[i].append(h.clone())
    ref = {k: torch.stack(v, 1).numpy() for k, v in rec.items()}
    g = export_to_nir(net, x[:1, 0])
    nir.write(f'{D}/snn_nir.h5', g)
    with h5py.File(f'{D}/snn_nir.h5') as f:
        names = list(f['node/nodes'])
    j, got = tern(f'{D}/snn_nir.h5', x, 'snnnir', '--from', 'snntorch')
    lifs = [n for n in got]
    print('snnTorch export_to_nir nodes', names, 'spiking', lifs)
    compare('snnTorch export_to_nir + --from snntorch', {lifs[0]: ref[1], lifs[1]: ref[3]} if len(lifs) == 2 else {}, got)
    j, got = tern(f'{D}/snn_nir.h5', x, 'snnnir0', '--dt', '1e-4')
    compare('snnTorch export_to_nir, --dt 1e-4 but no --from', {lifs[0]: ref[1], lifs[1]: ref[3]}, got)
except Exception as e:
    print('snnTorch export_to_nir failed:', type(e).__name__, str(e)[:300])

# ---------------- Norse
import norse.torch as norse
g = torch.Generator().manual_seed(3)
inv = torch.tensor([100.0, 125.0, 200.0, 250.0])[torch.randint(0, 4, (24,), generator=g)]
layers = [dy(nn.Linear(NI, 24), g), norse.LIFBoxCell(norse.LIFBoxParameters(tau_mem_inv=inv, v_leak=torch.tensor(0.25), v_th=torch.tensor(1.0), v_reset=torch.tensor(-0.125), method='heaviside')),
          dy(nn.Linear(24, 16), g), norse.LIFCell(norse.LIFParameters(tau_syn_inv=torch.tensor(200.0), tau_mem_inv=torch.tensor(100.0), v_th=torch.tensor(0.25), method='heaviside')),
          dy(nn.Linear(16, 12), g), norse.IAFCell(norse.IAFParameters(v_th=torch.tensor(1.0), v_reset=torch.tensor(-0.5), method='heaviside')),
          dy(nn.Linear(12, 4), g), norse.LIBoxCell(norse.LIBoxParameters(tau_mem_inv=torch.tensor(50.0), v_leak=torch.tensor(0.125)))]
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
ternion.export(net, x[:, 0], f'{D}/norse.h5', timesteps=T)
j, got = tern(f'{D}/norse.h5', x, 'norse')
compare('Norse ternion.export (LIFBoxCell, LIFCell, IAFCell)', ref, got)
print('  Norse LI readout predictions equal:', j['predictions'] == torch.stack(rec[7], 1).sum(1).argmax(-1).tolist())
try:
    cell = norse.LIFBoxCell(norse.LIFBoxParameters(tau_mem_inv=torch.tensor(125.0), v_leak=torch.tensor(0.25), v_th=torch.tensor(1.0), v_reset=torch.tensor(-0.125), method='heaviside'))
    cell2 = norse.LIFCell(norse.LIFParameters(tau_syn_inv=torch.tensor(200.0), tau_mem_inv=torch.tensor(100.0), v_th=torch.tensor(0.25), method='heaviside'))
    st = st2 = None; rr = []; rr2 = []
    with torch.no_grad():
        for t in range(T):
            z, st = cell(layers[0](x[:, t]), st); rr.append(z)
            z2, st2 = cell2(layers[2](z), st2); rr2.append(z2)
    ref = {'1': torch.stack(rr, 1).numpy(), '3': torch.stack(rr2, 1).numpy()}
    g2 = norse.to_nir(nn.Sequential(layers[0], cell, layers[2], cell2), type_check=False)
    import nir
    nir.write(f'{D}/norse_nir.h5', g2)
    with h5py.File(f'{D}/norse_nir.h5') as f:
        print('Norse to_nir nodes', {n: f[f'node/nodes/{n}/type'][()].decode() for n in f['node/nodes']})
    j, got = tern(f'{D}/norse_nir.h5', x, 'norsenir', '--from', 'norse')
    ks = sorted(got)
    compare('Norse to_nir + --from norse (LIFBoxCell, LIFCell)', dict(zip(ks, [ref['1'], ref['3']])), got)
    j, got = tern(f'{D}/norse_nir.h5', x, 'norsenir0')
    compare('Norse to_nir, no --from', dict(zip(ks, [ref['1'], ref['3']])), got)
except Exception as e:
    print('Norse to_nir failed:', type(e).__name__, str(e)[:300])

# ---------------- Sinabs
import sinabs.layers as sl
from sinabs.activation import SingleSpike
g = torch.Generator().manual_seed(4)
tau = torch.tensor([4.0, 8.0, 10.0, 20.0])[torch.randint(0, 4, (24,), generator=g)]
net = nn.Sequential(dy(nn.Linear(NI, 24), g), sl.LIF(tau_mem=tau, spike_threshold=torch.full((24,), 0.5), spike_fn=SingleSpike),
                    dy(nn.Linear(24, 16), g), sl.IAF(spike_threshold=1.0, spike_fn=SingleSpike),
                    dy(nn.Linear(16, 5), g), sl.ExpLeak(tau_mem=10.0))
rec = {}
hooks = [net[i].register_forward_hook(lambda m, a, o, i=i: rec.__setitem__(str(i), o.detach().numpy())) for i in (1, 3, 5)]
with torch.no_grad():
    out = net(x)  # Sinabs: [B, T, n]
ternion.export(net, x[:, 0], f'{D}/sinabs.h5', timesteps=T)
j, got = tern(f'{D}/sinabs.h5', x, 'sinabs')
compare('Sinabs ternion.export (LIF, IAF)', {k: rec[k] for k in ('1', '3')}, got)
print('  Sinabs ExpLeak readout predictions equal:', j['predictions'] == out.sum(1).argmax(-1).tolist())
try:
    import sinabs
    for h in hooks: h.remove()
    for m in net.modules():
        if hasattr(m, 'reset_states'): m.reset_states()
    g3 = sinabs.to_nir(net, x[:1, :1])
    import nir
    nir.write(f'{D}/sinabs_nir.h5', g3)
    with h5py.File(f'{D}/sinabs_nir.h5') as f:
        print('Sinabs to_nir nodes', {n: f[f'node/nodes/{n}/type'][()].decode() for n in f['node/nodes']})
    j, got = tern(f'{D}/sinabs_nir.h5', x, 'sinabsnir', '--from', 'sinabs')
    ks = sorted(got)
    print('  spiking nodes', ks)
    compare('Sinabs to_nir + --from sinabs (LIF, IAF)', dict(zip(ks, [rec['1'], rec['3']])), got)
    print('  predictions equal:', j['predictions'] == out.sum(1).argmax(-1).tolist())
    j, got = tern(f'{D}/sinabs_nir.h5', x, 'sinabsnir0', '--dt', '1', '--discretization', 'exact', '--reset', 'subtract')
    compare('Sinabs to_nir, --dt 1 --discretization exact --reset subtract but no --from', dict(zip(ks, [rec['1'], rec['3']])), got)
except Exception as e:
    import traceback; traceback.print_exc()
    print('Sinabs to_nir failed:', type(e).__name__, str(e)[:300])
