// sim/dist/distributed.hpp on MPI (OpenMPI, MPICH: MPI-3). Every collective is on MPI_COMM_WORLD;
// large buffers go point to point in pieces of at most 1 GiB (MPI counts are int).
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "sim/dist/distributed.hpp"

namespace ternion::dist {

namespace {

bool g_started = false;
int g_rank = 0, g_size = 1, g_local = 1;
bool g_threads = false;  // MPI_THREAD_SERIALIZED: a helper thread may make the calls

constexpr int kTagData = 7001, kTagProgress = 7002, kTagFinal = 7003;
constexpr std::size_t kPiece = std::size_t{1} << 30;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

void send_bytes(const void* data, std::size_t n, int to) {
    const auto* p = static_cast<const char*>(data);
    for (std::size_t off = 0; off < n; off += kPiece)
        MPI_Send(p + off, static_cast<int>(std::min(kPiece, n - off)), MPI_BYTE, to, kTagData,
                 MPI_COMM_WORLD);
}

void recv_bytes(void* data, std::size_t n, int from) {
    auto* p = static_cast<char*>(data);
    for (std::size_t off = 0; off < n; off += kPiece)
        MPI_Recv(p + off, static_cast<int>(std::min(kPiece, n - off)), MPI_BYTE, from, kTagData,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

// Seconds a rank waits for the others at an agreement point before it ends the job.
double timeout_floor() {
    const char* e = std::getenv("TERNION_MPI_TIMEOUT");
    const double v = e ? std::atof(e) : 0.0;
    return v > 0 ? v : 300.0;
}

// A rank that waited `limit_s` for the others ends the job: one of them hangs.
[[noreturn]] void end_hung_job(double limit_s) {
    std::fprintf(stderr,
                 "ternion: error: rank %d: the other processes did not answer within %.0f s "
                 "(TERNION_MPI_TIMEOUT plus twice this stage's time); ending the job\n",
                 g_rank, limit_s);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
}

// Completes `req`, or aborts the job once `limit_s` have passed.
void wait_or_abort(MPI_Request& req, double limit_s) {
    const auto t0 = Clock::now();
    int done = 0;
    auto nap = std::chrono::microseconds(50);
    while (MPI_Test(&req, &done, MPI_STATUS_IGNORE), !done) {
        if (seconds_since(t0) > limit_s) end_hung_job(limit_s);
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, std::chrono::microseconds(20000));
    }
}

// A flat byte buffer of trivially copyable values.
struct Packer {
    std::vector<char> bytes;
    template <class T>
    void put(const T* v, std::size_t n) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (n == 0) return;
        const auto* p = reinterpret_cast<const char*>(v);
        bytes.insert(bytes.end(), p, p + n * sizeof(T));
    }
    template <class T>
    void put(const T& v) {
        put(&v, 1);
    }
};
struct Unpacker {
    const char* p;
    template <class T>
    void get(T* v, std::size_t n) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (n == 0) return;  // v may be an empty vector's null data()
        std::memcpy(v, p, n * sizeof(T));
        p += n * sizeof(T);
    }
    template <class T>
    T get() {
        T v;
        get(&v, 1);
        return v;
    }
};

std::vector<char> pack(const RunResult& r) {
    Packer k;
    const auto samples = static_cast<std::size_t>(r.samples);
    k.put(r.samples);
    k.put(r.timesteps);
    k.put(r.simulate_s);
    k.put(static_cast<std::uint64_t>(r.nodes.size()));
    k.put(r.nodes.data(), r.nodes.size());
    k.put(r.predictions.data(), samples);
    for (const auto& o : r.output_sum) {
        k.put(static_cast<std::uint64_t>(o.size()));
        k.put(o.data(), o.size());
    }
    k.put(r.sample_s.data(), samples);
    k.put(static_cast<std::uint64_t>(r.sample_tallies.size()));
    k.put(r.sample_tallies.data(), r.sample_tallies.size());
    return std::move(k.bytes);
}

RunResult unpack(const char* bytes) {
    Unpacker u{bytes};
    RunResult r;
    r.samples = u.get<std::int64_t>();
    r.timesteps = u.get<std::int64_t>();
    r.simulate_s = u.get<double>();
    const auto samples = static_cast<std::size_t>(r.samples);
    r.nodes.resize(static_cast<std::size_t>(u.get<std::uint64_t>()));
    u.get(r.nodes.data(), r.nodes.size());
    r.predictions.resize(samples);
    u.get(r.predictions.data(), samples);
    r.output_sum.resize(samples);
    for (auto& o : r.output_sum) {
        o.resize(static_cast<std::size_t>(u.get<std::uint64_t>()));
        u.get(o.data(), o.size());
    }
    r.sample_s.resize(samples);
    u.get(r.sample_s.data(), samples);
    r.sample_tallies.resize(static_cast<std::size_t>(u.get<std::uint64_t>()));
    u.get(r.sample_tallies.data(), r.sample_tallies.size());
    return r;
}

}  // namespace

bool built_with_mpi() {
    return true;
}

bool launched_by_mpi() {
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
        if (std::getenv(v)) return true;
    return false;
}

void init(int* argc, char*** argv) {
    if (g_started || !launched_by_mpi()) return;
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    g_started = true;
    g_threads = provided >= MPI_THREAD_SERIALIZED;
    // Errors of MPI calls end the job (the default), so none is silently ignored.
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &g_local);
    MPI_Comm_free(&node);
}

void finalize() {
    if (!g_started) return;
    MPI_Finalize();
    g_started = false;
}

bool active() {
    return g_started;
}
int rank() {
    return g_rank;
}
int ranks() {
    return g_size;
}
int local_ranks() {
    return g_local;
}

void abort(int code) {
    std::fflush(stdout);
    std::fflush(stderr);
    if (g_started) MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
}

std::optional<Failure> agree(const std::optional<Failure>& mine, double own_s) {
    if (!g_started) return mine;
    int me = mine ? g_rank : g_size, first = g_size;
    MPI_Request req;
    MPI_Iallreduce(&me, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
    wait_or_abort(req, timeout_floor() + 2 * own_s);
    if (first == g_size) return std::nullopt;
    Failure f = mine && g_rank == first ? *mine : Failure{};
    long long head[2] = {f.code, static_cast<long long>(f.line.size())};
    MPI_Bcast(head, 2, MPI_LONG_LONG, first, MPI_COMM_WORLD);
    f.code = static_cast<int>(head[0]);
    f.line.resize(static_cast<std::size_t>(head[1]));
    MPI_Bcast(f.line.data(), static_cast<int>(head[1]), MPI_CHAR, first, MPI_COMM_WORLD);
    return f;
}

double max_over_ranks(double v) {
    if (!g_started) return v;
    double m = v;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

double barrier() {
    if (!g_started) return 0.0;
    const auto t0 = Clock::now();
    MPI_Barrier(MPI_COMM_WORLD);
    return seconds_since(t0);
}

RunResult reduce(RunResult local) {
    if (!g_started || g_size == 1) return local;
    std::vector<char> mine = pack(local);
    auto n = static_cast<unsigned long long>(mine.size());
    std::vector<unsigned long long> sizes(static_cast<std::size_t>(g_size));
    MPI_Gather(&n, 1, MPI_UNSIGNED_LONG_LONG, sizes.data(), 1, MPI_UNSIGNED_LONG_LONG, 0,
               MPI_COMM_WORLD);
    if (g_rank != 0) {
        send_bytes(mine.data(), mine.size(), 0);
        return local;
    }
    RunResult m;
    append_part(m, local);
    for (int r = 1; r < g_size; ++r) {
        std::vector<char> buf(static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)]));
        recv_bytes(buf.data(), buf.size(), r);
        append_part(m, unpack(buf.data()));
    }
    return m;
}

void gather_trace(TraceRecorder& rec) {
    if (!g_started || g_size == 1) return;
    const auto held = rec.held_rows();
    long long mine[2] = {held.first, held.second};
    std::vector<long long> all(2 * static_cast<std::size_t>(g_size));
    MPI_Gather(mine, 2, MPI_LONG_LONG, all.data(), 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    const std::vector<TraceRows> bufs = rec.row_buffers();
    if (g_rank != 0) {
        const auto rows = static_cast<std::size_t>(held.second - held.first);
        for (const auto& b : bufs) send_bytes(b.data, rows * b.row_bytes, 0);
        return;
    }
    for (int r = 1; r < g_size; ++r) {
        const auto lo = static_cast<std::size_t>(all[2 * static_cast<std::size_t>(r)]);
        const auto hi = static_cast<std::size_t>(all[2 * static_cast<std::size_t>(r) + 1]);
        for (const auto& b : bufs)
            recv_bytes(static_cast<char*>(b.data) + lo * b.row_bytes, (hi - lo) * b.row_bytes, r);
    }
}

// Rank 0 draws; every other rank reports its count (at most every 100 ms, and a last one).
// Only a helper thread makes MPI calls while the samples run (MPI_THREAD_SERIALIZED), and
// finish() joins it before the caller's next MPI call.
struct Progress::Impl {
    std::int64_t total = 0;
    bool show = false;
    std::atomic<bool> stop{false};
    std::thread helper;
    Clock::time_point start = Clock::now();

    void draw(std::int64_t done) const {
        const double el = seconds_since(start);
        const int w = 30, filled = static_cast<int>(w * done / std::max<std::int64_t>(total, 1));
        std::fprintf(
            stderr, "\r[%.*s%*s] %lld/%lld samples  %.1fs  eta %.1fs  %d ranks", filled,
            "##############################", w - filled, "", static_cast<long long>(done),
            static_cast<long long>(total), el,
            done ? el * static_cast<double>(total - done) / static_cast<double>(done) : 0.0,
            g_size);
        std::fflush(stderr);
    }
    void report(const std::atomic<std::int64_t>& done) {
        long long last = -1;
        while (!stop.load()) {
            const long long d = done.load();
            if (d != last) MPI_Send(&d, 1, MPI_LONG_LONG, 0, kTagProgress, MPI_COMM_WORLD);
            last = d;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        const long long d = done.load();
        MPI_Send(&d, 1, MPI_LONG_LONG, 0, kTagFinal, MPI_COMM_WORLD);
    }
    void collect(const std::atomic<std::int64_t>& done) {
        std::vector<long long> counts(static_cast<std::size_t>(g_size), 0);
        int finals = 0;
        auto last_draw = Clock::now();
        // Once this rank is done, the others' last messages are waited for as at an agreement.
        std::optional<Clock::time_point> stopped;
        double limit_s = 0.0;
        while (finals < g_size - 1 || !stop.load()) {
            if (!stopped && stop.load()) {
                stopped = Clock::now();
                limit_s = timeout_floor() + 2 * seconds_since(start);
            }
            if (stopped && seconds_since(*stopped) > limit_s) end_hung_job(limit_s);
            int flag = 0;
            MPI_Status st;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
            if (flag && (st.MPI_TAG == kTagProgress || st.MPI_TAG == kTagFinal)) {
                MPI_Recv(&counts[static_cast<std::size_t>(st.MPI_SOURCE)], 1, MPI_LONG_LONG,
                         st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                finals += st.MPI_TAG == kTagFinal;
                continue;
            }
            counts[0] = done.load();
            if (show && Clock::now() - last_draw > std::chrono::milliseconds(100)) {
                long long sum = 0;
                for (auto c : counts) sum += c;
                draw(sum);
                last_draw = Clock::now();
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        long long sum = done.load();
        for (std::size_t r = 1; r < counts.size(); ++r) sum += counts[r];
        if (show) {
            draw(sum);
            std::fprintf(stderr, "\n");
        }
    }
};

Progress::Progress(std::int64_t total, bool show) : impl_(std::make_unique<Impl>()) {
    impl_->total = total;
    // mpirun hands rank 0 a terminal as standard output only (standard error is a pipe it
    // forwards), so either being a terminal means a person is watching.
    impl_->show = show && g_rank == 0 && (isatty(STDERR_FILENO) || isatty(STDOUT_FILENO));
    if (!g_started || g_size == 1 || !g_threads) return;
    if (g_rank == 0)
        impl_->helper = std::thread([this] { impl_->collect(done_); });
    else
        impl_->helper = std::thread([this] { impl_->report(done_); });
}

Progress::~Progress() {
    finish();
}

void Progress::finish() {
    if (!impl_->helper.joinable()) return;
    impl_->stop = true;
    impl_->helper.join();
}

}  // namespace ternion::dist
