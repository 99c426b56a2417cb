// lemaire: SpikingJelly's Lemaire estimator (estimate_lemaire_energy): synaptic ops, the
// neurons' state arithmetic, addressing, and memory priced per byte by buffer size
// (docs/cost-model.md, section 2.6).
#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "hw/conventions/convention.hpp"
#include "sim/kernels/neuron_rules.hpp"

namespace ternion::hw {

namespace {

using nlohmann::json;

// SpikingJelly's models are float32: every tensor element it moves is 4 bytes.
constexpr double kElemBytes = 4.0;

// is_binary_tensor (op_counter/base.py): every value 0 or 1.
bool binary(const Activity& a) {
    if (a.ternary && a.listed) {
        if (a.all_ones) return true;
        for (auto i : a.active)
            if (a.values[i] != 1.0f) return false;
        return true;
    }
    for (float v : a.values)
        if (v != 0.0f && v != 1.0f) return false;
    return true;
}

// is_sparse_access_tensor (op_counter/_sparse_memory.py) with its default threshold: binary, or
// at least half the elements zero; written as SpikingJelly evaluates the ratio.
bool sparse(double nnz, double numel, bool is_binary) {
    if (numel <= 0) return false;
    return is_binary || 1.0 - nnz / numel >= 0.5;
}

// One call of a module is one sample at one step (a batch of 1 in single-step mode). Slots of a
// connection layer: 0 binary calls, 1 their non-zero inputs, 2-4 the elements read in, written
// out and of parameters read, 5-7 each sample's largest single call of those three (summed over
// samples: each step adds how much it raised the sample's largest so far). Slots of a neuron:
// 0 calls, 1-2 membrane elements read and written, 3 state adds and compares, 4 state products,
// 5-6 the elements read and written at step 0.
class LemaireTally final : public StepTally {
  public:
    std::string_view name() const override { return "lemaire accesses"; }
    int slots() const override { return 8; }
    struct Memo final : Scratch {
        bool known = false, connection = false, neuron = false, subtract = false;
        double reset_value = 0.0;   // v_reset (hard) or v_threshold (soft): the reset's factor
        double dense_params = 0.0;  // weights, and the bias when the source layer had one
        double fanout = 0.0;        // fanout_taps
        bool bias = false;
        double max_in = 0.0, max_out = 0.0, max_par = 0.0;  // this sample's largest calls
    };
    std::unique_ptr<Scratch> make_scratch() const override { return std::make_unique<Memo>(); }

    void tally(const Node& node, const Activity& in, const Activity& out, const NodeState*,
               std::int64_t step, Scratch* scratch, double* slots) const override {
        auto& m = static_cast<Memo&>(*scratch);
        if (!m.known) learn(node, m);
        if (m.connection)
            connection(in, out, step, m, slots);
        else if (m.neuron)
            neuron(in, out, step, m, slots);
    }

  private:
    static void learn(const Node& node, Memo& m) {
        m.known = true;
        const CountTraits t = node.count_traits();
        if (t.connection) {
            m.connection = true;
            m.fanout = static_cast<double>(t.fanout_taps);
            m.bias = node.module_shape().bias_ops_per_step > 0;
            m.dense_params = static_cast<double>(m.bias ? node.param_count() : node.weight_count());
            return;
        }
        if (node.category() != NodeCategory::neuron || !node.is_spiking()) return;
        const auto f = node.leaky_form();
        if (!f || f->ternary || f->threshold.empty()) return;
        m.neuron = true;
        m.subtract = f->subtract;
        m.reset_value = m.subtract ? f->threshold[0] : (f->v_reset.empty() ? 0.0 : f->v_reset[0]);
    }

    // _LemaireForwardTracker's Linear/Conv hook (core.py) and the binary-input test of the
    // synop/ac/addressing counters.
    static void connection(const Activity& in, const Activity& out, std::int64_t step, Memo& m,
                           double* slots) {
        const double nin = static_cast<double>(in.nonzero());
        const double numel_in = static_cast<double>(in.values.size());
        const double nout = static_cast<double>(out.nonzero());
        const double numel_out = static_cast<double>(out.values.size());
        const bool bin = binary(in);
        if (bin) {
            slots[0] += 1.0;
            slots[1] += nin;
        }
        double rin = numel_in, wout = numel_out, par = m.dense_params;
        if (sparse(nin, numel_in, bin)) {
            const double out_active = sparse(nout, numel_out, binary(out)) ? nout : numel_out;
            rin = nin;
            wout = out_active;
            par = nin * m.fanout + (m.bias ? out_active : 0.0);
        }
        slots[2] += rin;
        slots[3] += wout;
        slots[4] += par;
        if (step == 0) m.max_in = m.max_out = m.max_par = 0.0;
        auto raise = [](double& best, double v, double& slot) {
            if (v > best) {
                slot += v - best;
                best = v;
            }
        };
        raise(m.max_in, rin, slots[5]);
        raise(m.max_out, wout, slots[6]);
        raise(m.max_par, par, slots[7]);
    }

    // NeuronStateCounter (op_counter/neuron_state.py) on SpikingJelly's LIFNode, torch backend,
    // one step, decay_input: the charge v + (x - (v - v_reset)) / tau is two subtractions, a
    // division and an addition; firing a subtraction and a comparison; a hard reset
    // (1 - s) * v + s * v_reset a product and an addition, a soft one v - s * v_threshold a
    // subtraction. Each reads its membrane operands and writes its result in full, except where
    // a sparse non-state operand drives it (the input x, 1 - s, s * c): then as many elements as
    // that operand has non-zeros.
    static void neuron(const Activity& in, const Activity& out, std::int64_t step, const Memo& m,
                       double* slots) {
        const double n = static_cast<double>(out.values.size());
        const double s = static_cast<double>(out.nonzero());
        const double nx_nz = static_cast<double>(in.nonzero());
        const double nx =
            sparse(nx_nz, static_cast<double>(in.values.size()), binary(in)) ? nx_nz : n;
        // s * c: all zeros when c = 0, binary when c is 0 or 1.
        const double c = m.reset_value;
        const double nt = c == 0.0 ? 0.0 : s;
        const double r = sparse(nt, n, c == 0.0 || c == 1.0) ? std::min(nt, n) : n;
        const double reads = m.subtract ? 6.0 * n + nx + r : 7.0 * n + nx - s + r;
        const double writes = m.subtract ? 4.0 * n + nx + r : 5.0 * n + nx - s + r;
        slots[0] += 1.0;
        slots[1] += reads;
        slots[2] += writes;
        slots[3] += 6.0 * n;
        slots[4] += m.subtract ? n : 2.0 * n;
        if (step == 0) {
            slots[5] += reads;
            slots[6] += writes;
        }
    }
};

const LemaireTally kTally;

// Figure names in CostReport::figures (per inference; buffers in bytes).
constexpr const char* kSynop = "lemaire.synop";
constexpr const char* kAcF = "lemaire.ac";
constexpr const char* kMacF = "lemaire.mac";
constexpr const char* kStateAcc = "lemaire.state_acc";
constexpr const char* kStateMac = "lemaire.state_mac";
constexpr const char* kAccAddr = "lemaire.acc_addr";
constexpr const char* kMacAddr = "lemaire.mac_addr";
constexpr const char* kReadIn = "lemaire.read_in_bytes";
constexpr const char* kWriteOut = "lemaire.write_out_bytes";
constexpr const char* kParams = "lemaire.read_params_bytes";
constexpr const char* kReadPot = "lemaire.read_potential_bytes";
constexpr const char* kWritePot = "lemaire.write_potential_bytes";
constexpr const char* kBufIn = "lemaire.read_in_buffer_bytes";
constexpr const char* kBufOut = "lemaire.write_out_buffer_bytes";
constexpr const char* kBufPar = "lemaire.params_buffer_bytes";
constexpr const char* kBufPot = "lemaire.potential_buffer_bytes";
constexpr const char* kOpsPj = "lemaire.ops_pj";
constexpr const char* kAddrPj = "lemaire.addressing_pj";
constexpr const char* kInoutPj = "lemaire.inout_pj";
constexpr const char* kParamsPj = "lemaire.params_pj";
constexpr const char* kPotPj = "lemaire.potential_pj";
constexpr const char* kMemPj = "lemaire.memory_pj";
constexpr const char* kTotalPj = "lemaire.total_pj";
constexpr const char* kSkipped = "lemaire.layers_not_counted";
constexpr const char* kNeuronLayers = "lemaire.neuron_layers";
constexpr const char* kSkippedBasis = "lemaire: not counted by these rules (its work is left out)";

class Lemaire final : public Convention {
  public:
    std::string_view name() const override { return "lemaire"; }
    std::vector<const StepTally*> needs() const override { return {&kTally}; }
    void begin(const RunRecord& run, CostReport& r) const override {
        if (!run.has(kTally))
            throw std::invalid_argument(
                "lemaire counting needs a run that took its tally (hw::tallies_for)");
        for (const char* k : {kSynop, kAcF, kMacF, kStateAcc, kStateMac, kAccAddr, kMacAddr,
                              kReadIn, kWriteOut, kParams, kReadPot, kWritePot, kBufIn, kBufOut,
                              kBufPar, kBufPot, kSkipped, kNeuronLayers})
            r.figures[k] = 0.0;
    }

    void count(const LayerRecord& l, LayerCost& c, PriceContext& x, CostReport& r) const override {
        const double* t = x.run->slots_of(l, kTally);
        const double calls = x.Sd * x.Td;
        auto& f = r.figures;
        c.count[kAc] = c.count[kMac] = 0.0;
        if (l.traits.connection && !l.attention_shape) {
            const double fan = static_cast<double>(l.traits.fanout_taps);
            const bool conv = l.traits.kernel_taps > 0;
            const double bin_calls = t[0], bin_nnz = t[1], other = calls - bin_calls;
            // A convolution's spike reaches the taps that land inside the output (SpikingJelly
            // convolves the spikes with all-one weights): the engine's pairs on spike steps, equal
            // unless a weight is exactly 0 (ternion skips those, SpikingJelly does not).
            const double syn = conv ? static_cast<double>(l.synapses.pairs_ternary) : fan * bin_nnz;
            const double mac = static_cast<double>(l.dense_macs_per_step) * other;
            const double acc_addr =
                fan * bin_nnz +
                other * static_cast<double>(l.in_size + l.neurons +
                                            static_cast<std::int64_t>(l.traits.kernel_taps));
            const double mac_addr = conv ? 2.0 * bin_nnz : 0.0;
            // synop and ac are two counters of SpikingJelly that both see the same spike-driven
            // product; its total adds both, so each synaptic event is billed twice.
            c.count[kAc] = 2.0 * syn + acc_addr;
            c.count[kMac] = mac + mac_addr;
            f[kSynop] += syn * x.invS;
            f[kAcF] += syn * x.invS;
            f[kMacF] += mac * x.invS;
            f[kAccAddr] += acc_addr * x.invS;
            f[kMacAddr] += mac_addr * x.invS;
            f[kReadIn] += kElemBytes * t[2] * x.invS;
            f[kWriteOut] += kElemBytes * t[3] * x.invS;
            f[kParams] += kElemBytes * t[4] * x.invS;
            // The largest single access: the mean over samples of each sample's largest.
            f[kBufIn] = std::max(f[kBufIn], kElemBytes * t[5] * x.invS);
            f[kBufOut] = std::max(f[kBufOut], kElemBytes * t[6] * x.invS);
            f[kBufPar] = std::max(f[kBufPar], kElemBytes * t[7] * x.invS);
            c.basis =
                "lemaire: spike inputs as synop + ac (each event twice) and addressing, other "
                "inputs as dense MACs; bytes of inputs, outputs and weights read";
            return;
        }
        if (t[0] > 0) {  // a neuron counted as SpikingJelly's LIFNode
            // NeuronStateCounter knows a membrane once it is a tensor. At a sample's first step
            // the membrane is still the float v_reset and becomes a tensor (full_like) that the
            // counter adopts only while no other state is alive (neuron_state.py, the
            // _STATE_MATERIALIZATION_OPS test): the first neuron layer evaluated is counted from
            // step 0, every later one from step 1.
            double counted = t[0], acc = t[3], mac = t[4], rd = t[1], wr = t[2];
            if (f[kNeuronLayers] > 0) {
                const double per_call_mac = t[4] / t[0], n = static_cast<double>(l.neurons);
                counted -= x.Sd;
                acc -= 6.0 * n * x.Sd;
                mac -= per_call_mac * x.Sd;
                rd -= t[5];
                wr -= t[6];
            }
            f[kNeuronLayers] += 1.0;
            c.count[kAc] = acc;
            c.count[kMac] = mac;
            f[kStateAcc] += acc * x.invS;
            f[kStateMac] += mac * x.invS;
            f[kReadPot] += kElemBytes * rd * x.invS;
            f[kWritePot] += kElemBytes * wr * x.invS;
            if (counted > 0)
                f[kBufPot] = std::max(f[kBufPot], kElemBytes * static_cast<double>(l.neurons));
            c.basis = "lemaire: neuron state as SpikingJelly's LIFNode (torch, one step) counts it";
            return;
        }
        c.basis = "lemaire: not counted";
        const bool computes = l.ops.ac + l.ops.mac + l.ops.neuron_update > 0;
        if (computes || l.attention_shape) {
            f[kSkipped] += 1.0;
            c.basis = kSkippedBasis;
        }
    }

    void close(CostReport& r, const PriceContext& x) const override {
        auto& f = r.figures;
        const double e_ac = x.unit[kAc], e_mac = x.unit[kMac];
        f[kOpsPj] = (f[kSynop] + f[kAcF] + f[kStateAcc]) * e_ac + (f[kMacF] + f[kStateMac]) * e_mac;
        f[kAddrPj] = f[kAccAddr] * e_ac + f[kMacAddr] * e_mac;
        double inout = 0.0, params = 0.0, pot = 0.0;
        if (x.buffer_rule) {
            const BufferSizeRule& b = *x.buffer_rule;
            inout =
                f[kReadIn] * b.pj_per_byte(f[kBufIn]) + f[kWriteOut] * b.pj_per_byte(f[kBufOut]);
            params = f[kParams] * b.pj_per_byte(f[kBufPar]);
            pot = (f[kReadPot] + f[kWritePot]) * b.pj_per_byte(f[kBufPot]);
        } else {
            r.notes.push_back(
                "lemaire: profile '" + r.profile_name +
                "' has no memory.by_buffer_size rule, so the memory term is 0 (--profile lemaire "
                "has SpikingJelly's)");
        }
        f[kInoutPj] = inout;
        f[kParamsPj] = params;
        f[kPotPj] = pot;
        f[kMemPj] = inout + params + pot;
        f[kTotalPj] = f[kOpsPj] + f[kAddrPj] + f[kMemPj];
        if (f[kMemPj] > 0) {
            r.added_pj.emplace_back("memory by buffer size (Lemaire)", f[kMemPj]);
            r.per_inference_pj += f[kMemPj];
            r.total_pj += f[kMemPj] * x.Sd;
        }
    }

    void finish(CostReport& r) const override {
        r.notes.push_back(
            "lemaire: SpikingJelly's estimate_lemaire_energy rules, one module call per sample "
            "and step (a batch of 1 in single-step mode), float32 tensors; synaptic events are "
            "billed twice (its synop and ac counters both count them); neurons with a leaky form "
            "are counted as its LIFNode with decay_input; the memory term is added to the total "
            "(the ANN equivalent has no such term)");
        if (r.samples > 1)
            r.notes.push_back(
                "lemaire: over several samples each buffer is the mean of the samples' largest "
                "access; SpikingJelly prices one forward pass at its own largest");
        std::string list;
        for (const LayerCost& c : r.layers)
            if (c.basis == kSkippedBasis) list += (list.empty() ? "" : ", ") + c.name;
        if (!list.empty())
            r.notes.push_back(
                "lemaire: layers that compute but that these rules do not count (only "
                "Linear/Affine/Conv and neurons with a leaky form are): " +
                list);
    }

    void report_json(const CostReport& r, json& doc) const override {
        json j = json::object();
        for (const auto& [k, v] : r.figures)
            if (k.rfind("lemaire.", 0) == 0) j[k.substr(8)] = v;
        doc["lemaire"] = j;
    }
    void report_text(const CostReport& r, std::ostream& os) const override {
        const auto& f = r.figures;
        auto g = [&](const char* k) { return fmt(f.at(k)); };
        os << "Lemaire estimate (per inference): " << g(kTotalPj) << " pJ = ops " << g(kOpsPj)
           << " + addressing " << g(kAddrPj) << " + memory " << g(kMemPj) << " (in/out "
           << g(kInoutPj) << ", weights " << g(kParamsPj) << ", membranes " << g(kPotPj)
           << ")\n  counts: synop " << g(kSynop) << ", ac " << g(kAcF) << ", mac " << g(kMacF)
           << ", state_acc " << g(kStateAcc) << ", state_mac " << g(kStateMac) << ", acc_addr "
           << g(kAccAddr) << ", mac_addr " << g(kMacAddr) << "\n  bytes: in " << g(kReadIn)
           << ", out " << g(kWriteOut) << ", weights " << g(kParams) << ", membranes "
           << g(kReadPot) << " read + " << g(kWritePot) << " written; buffers: in " << g(kBufIn)
           << ", out " << g(kBufOut) << ", weights " << g(kBufPar) << ", membranes " << g(kBufPot)
           << "\n";
    }
};

}  // namespace

const Convention& lemaire_convention() {
    static const Lemaire c;
    return c;
}

}  // namespace ternion::hw
