package bridge

// MaxPluginRequests bounds the requests of one plugin instance to the host
// (service/call) that are being answered at once. Past it, the host stops
// reading from that plugin until one of them is answered: backpressure,
// not refusal. A refusal is an answer too, and a plugin flooding requests
// while not reading its answers would block those writes all the same; and
// a plugin fanning out many calls gets every one answered, late, rather
// than errors it must retry. The cost falls on the plugin that caused it:
// while it is at the bound, its answers and deltas wait behind its
// requests, and the host's deadlines bound that wait as any other.
//
// Each request being answered holds a goroutine and its params: 64 small
// requests are tens of KiB, where a flood of them, unbounded, grew the host
// by gigabytes. (Their params are bounded only by the line cap, Options.MaxLine.)
const MaxPluginRequests = 64
