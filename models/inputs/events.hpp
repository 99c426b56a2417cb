// Event-camera streams (x, y, t, p), as Tonic and SpikingJelly store them, framed into count
// tensors [T, 2, H, W] the way SpikingJelly's integrate_events_by_fixed_frames_number (split by
// number or by time) and integrate_events_by_fixed_duration do, bit for bit: channel 0 counts
// the events of polarity 0, channel 1 those of any other polarity. Reads SpikingJelly's .npz
// (arrays t, x, y, p), Tonic's structured .npy (fields x, y, t, p), a SpikingJelly dataset
// folder (<dir>/<class>/*.npz) and ternion's HDF5 layout (/events/{t,x,y,p,offsets},
// /labels); `ternion frames` writes /frames for `ternion run`. Rules and errors:
// docs/inputs.md, "Event cameras".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ternion {

// One sample's events, in the file's order. `file` and `prefix` name them in errors ("x",
// "/events/x"); `sample` is "" for a file of one sample, else "sample 3, ".
struct EventStream {
    std::vector<std::int64_t> x, y, t, p;
    std::string file, prefix, sample;
};

enum class SplitBy { number, time };
SplitBy parse_split_by(const std::string& s);  // throws OptionError("split-by")

struct FrameRule {
    std::int64_t frames = 0;  // M frames (integrate_events_by_fixed_frames_number), or 0
    SplitBy split_by = SplitBy::number;
    std::int64_t duration = 0;  // > 0: frames of this many time units (..._by_fixed_duration)
    std::int64_t height = 0, width = 0;
    // The frames' bytes allowed (float32 [T, 2, H, W]); more is refused before any is built.
    std::int64_t max_bytes = std::int64_t{8} << 30;
};
// Exactly one of frames >= 1 and duration >= 1, and a positive size; throws OptionError
// naming "frames", "duration" or "size".
void check_rule(const FrameRule& r);

// The frames of one stream, float32 [T, 2, H, W] row-major (T: M, or ceil(span / duration)).
// Refuses, naming the file and field: an empty stream, fields of different lengths, x or y
// outside the size (negative included), t out of order when splitting by time or duration,
// a span too short for M windows or for one frame of the duration.
std::vector<float> frame_events(const EventStream& ev, const FrameRule& r, std::int64_t& T);

// The samples of an event file or SpikingJelly dataset folder, with their labels (a folder's
// classes in sorted order, /labels of an HDF5 file; else none) and class names (folders).
struct EventFile {
    std::vector<EventStream> samples;
    std::vector<std::int64_t> labels;
    std::vector<std::string> classes;
};
EventFile read_event_file(const std::string& path);

// `ternion frames`: frames every sample of `paths` (read_event_file, in order) and writes `out`
// atomically: /frames float32 [samples, T, 2, H, W], /labels when known, and with a duration
// (whose T differs per stream) /frame_counts int64 [samples], shorter streams padded at the end
// with empty frames. Returns samples, T and events.
struct FramesSummary {
    std::int64_t samples = 0, timesteps = 0, events = 0;
};
FramesSummary write_frames_file(const std::vector<std::string>& paths, const std::string& out,
                                const FrameRule& r);

}  // namespace ternion
