// libFuzzer harness: the event-camera readers (SpikingJelly .npz, Tonic structured .npy) and
// the framing rules on arbitrary bytes: the first byte picks the format and the rule.
#include "models/inputs/events.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::uint8_t pick = data[0];
    const std::string p = ternion::fuzz::as_file(data + 1, size - 1, pick & 1 ? ".npy" : ".npz");
    ternion::fuzz::expect_clean([&] {
        const ternion::EventFile f = ternion::read_event_file(p);
        ternion::FrameRule r;
        r.height = r.width = 32;
        r.max_bytes = std::int64_t{256} << 20;  // frames from a few KB: a bounded answer
        if (pick & 2)
            r.duration = 1 + (pick >> 4);
        else
            r.frames = 1 + (pick >> 4),
            r.split_by = pick & 4 ? ternion::SplitBy::time : ternion::SplitBy::number;
        for (const auto& s : f.samples) {
            std::int64_t T = 0;
            ternion::frame_events(s, r, T);
        }
    });
    return 0;
}
