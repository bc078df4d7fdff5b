// SPDX-License-Identifier: MIT
// tailcause SDK, C++20 RAII layer over the USDT probes of sdk.h.
//
//   tailcause::Request req("tenant-a", "rag");            // request_begin, auto id
//   {
//     tailcause::Stage s(req, tailcause::StageKind::retrieval);   // stage_begin
//     tailcause::cache_lookup(req, "vectors", tailcause::CacheResult::hit, age, key_hash);
//   }                                                       // stage_end
//   std::thread worker([&] { tailcause::ContextScope c(req); ... });  // attach/detach
//   req.end(0);                                             // or let the destructor end it (0)
//
// Header-only: the probes and their semaphores live in the including binary. Every object keeps
// its strings as std::string so the probe always gets NUL-terminated copies that outlive it.
// While no tracer is attached a probe costs one load and a not-taken branch; the wrappers that
// must build a string first check the semaphore, so untraced calls do not allocate.
#ifndef TAILCAUSE_SDK_HPP
#define TAILCAUSE_SDK_HPP

#include "sdk.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <sys/random.h>

namespace tailcause
{

enum class StageKind : std::int64_t {
	prompt = TAILCAUSE_STAGE_PROMPT,
	embedding = TAILCAUSE_STAGE_EMBEDDING,
	retrieval = TAILCAUSE_STAGE_RETRIEVAL,
	generation = TAILCAUSE_STAGE_GENERATION,
	tool = TAILCAUSE_STAGE_TOOL,
	response = TAILCAUSE_STAGE_RESPONSE,
	other = TAILCAUSE_STAGE_OTHER,
};

enum class CacheResult : std::int64_t {
	hit = TAILCAUSE_CACHE_HIT,
	miss = TAILCAUSE_CACHE_MISS,
	stale = TAILCAUSE_CACHE_STALE,
};

// The name a stage is reported under (the stage_begin `name` argument for the fixed stages).
constexpr std::string_view stage_name(StageKind kind) noexcept
{
	switch (kind) {
	case StageKind::prompt: return "prompt";
	case StageKind::embedding: return "embedding";
	case StageKind::retrieval: return "retrieval";
	case StageKind::generation: return "generation";
	case StageKind::tool: return "tool";
	case StageKind::response: return "response";
	case StageKind::other: return "other";
	}
	return "other";
}

namespace detail
{

// Strings reach the probe as C strings: an embedded NUL would silently cut them.
inline std::string checked_string(std::string_view value, const char *what)
{
	if (value.find('\0') != std::string_view::npos)
		throw std::invalid_argument(std::string("tailcause: ") + what +
					    " contains a NUL byte");
	return std::string(value);
}

inline void random_bytes(void *out, std::size_t size)
{
	auto *bytes = static_cast<unsigned char *>(out);
	std::size_t filled = 0;
	while (filled < size) {
		ssize_t got = getrandom(bytes + filled, size - filled, 0);
		if (got <= 0)
			break;
		filled += static_cast<std::size_t>(got);
	}
	if (filled < size) { // no getrandom (old kernel, seccomp): fall back to random_device
		std::random_device device;
		for (; filled < size; ++filled)
			bytes[filled] = static_cast<unsigned char>(device());
	}
}

// splitmix64's finaliser is a bijection on 64-bit values: distinct inputs, distinct outputs.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

inline bool is_hex(char c) noexcept
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// W3C trace-context trace id: 32 hex digits, not all zero; stored lower-case.
inline std::string checked_trace_id(std::string_view id)
{
	bool all_zero = true;
	if (id.size() != 32)
		throw std::invalid_argument("tailcause: trace id must be 32 hex digits");
	std::string lower(id);
	for (char &c : lower) {
		if (!is_hex(c))
			throw std::invalid_argument("tailcause: trace id must be 32 hex digits");
		if (c >= 'A' && c <= 'F')
			c = static_cast<char>(c - 'A' + 'a');
		all_zero = all_zero && c == '0';
	}
	if (all_zero)
		throw std::invalid_argument("tailcause: trace id must not be all zeros");
	return lower;
}

inline bool lower_hex(std::string_view s) noexcept
{
	for (char c : s)
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	return true;
}

} // namespace detail

// Whether `value` is a W3C Trace Context traceparent the SDK passes on: version 00, exactly
// 00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>, lower-case hex, neither id all
// zeros. A request given an invalid one from an incoming header should start its own trace.
inline bool valid_traceparent(std::string_view value) noexcept
{
	if (value.size() != TAILCAUSE_TRACEPARENT_CHARS || value.substr(0, 3) != "00-" ||
	    value[35] != '-' || value[52] != '-')
		return false;
	const std::string_view trace = value.substr(3, 32), parent = value.substr(36, 16);
	return detail::lower_hex(trace) && detail::lower_hex(parent) &&
	       detail::lower_hex(value.substr(53, 2)) &&
	       trace.find_first_not_of('0') != std::string_view::npos &&
	       parent.find_first_not_of('0') != std::string_view::npos;
}

namespace detail
{

// The request_begin trace argument: a trace id (lower-cased) or a valid traceparent (as is).
inline std::string checked_trace_context(std::string_view value)
{
	if (value.size() == TAILCAUSE_TRACEPARENT_CHARS) {
		if (!valid_traceparent(value))
			throw std::invalid_argument(
				"tailcause: not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, "
				"lower-case, ids not all zeros)");
		return std::string(value);
	}
	return checked_trace_id(value);
}

} // namespace detail

// A random 128-bit W3C trace id as 32 lower-case hex digits (never all zeros).
inline std::string new_trace_id()
{
	static constexpr char digits[] = "0123456789abcdef";
	std::array<unsigned char, 16> bytes{};
	do {
		detail::random_bytes(bytes.data(), bytes.size());
	} while (bytes == std::array<unsigned char, 16>{});
	std::string out(32, '0');
	for (std::size_t i = 0; i < bytes.size(); ++i) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 0xf];
	}
	return out;
}

// A non-zero 64-bit request id, unique within the process (a random per-process salt plus a
// counter, mixed bijectively) and unlikely to repeat across processes.
inline std::uint64_t new_request_id()
{
	static const std::uint64_t salt = [] {
		std::uint64_t s = 0;
		detail::random_bytes(&s, sizeof(s));
		return s;
	}();
	static std::atomic<std::uint64_t> counter{0};
	for (;;) {
		std::uint64_t id =
			detail::mix64(salt + counter.fetch_add(1, std::memory_order_relaxed));
		if (id != 0)
			return id;
	}
}

// One agent request: request_begin on construction, request_end once (end() or destructor).
class Request
{
      public:
	// `trace_id`: the agent's trace id (32 hex digits), or its W3C traceparent, so that the
	// daemon's request span becomes a child of the agent's current span.
	Request(std::uint64_t id, std::string_view tenant, std::string_view agent,
		std::optional<std::string_view> trace_id = std::nullopt)
	    : id_(id), tenant_(detail::checked_string(tenant, "tenant")),
	      agent_(detail::checked_string(agent, "agent")),
	      trace_context_(trace_id ? detail::checked_trace_context(*trace_id) : std::string()),
	      trace_id_(trace_context_.size() == TAILCAUSE_TRACEPARENT_CHARS
				? trace_context_.substr(3, 32)
				: trace_context_)
	{
		tailcause_request_begin(id_, tenant_.c_str(), agent_.c_str(),
					trace_context_.empty() ? nullptr : trace_context_.c_str());
	}

	Request(std::string_view tenant, std::string_view agent,
		std::optional<std::string_view> trace_id = std::nullopt)
	    : Request(new_request_id(), tenant, agent, trace_id)
	{
	}

	Request(const Request &) = delete;
	Request &operator=(const Request &) = delete;

	Request(Request &&other) noexcept
	    : id_(other.id_), tenant_(std::move(other.tenant_)), agent_(std::move(other.agent_)),
	      trace_context_(std::move(other.trace_context_)),
	      trace_id_(std::move(other.trace_id_)), active_(std::exchange(other.active_, false))
	{
	}

	// Ends the request this object held (status 0) before taking over the other one.
	Request &operator=(Request &&other) noexcept
	{
		if (this != &other) {
			end_if_active(0);
			id_ = other.id_;
			tenant_ = std::move(other.tenant_);
			agent_ = std::move(other.agent_);
			trace_context_ = std::move(other.trace_context_);
			trace_id_ = std::move(other.trace_id_);
			active_ = std::exchange(other.active_, false);
		}
		return *this;
	}

	~Request()
	{
		end_if_active(0);
	}

	// Ends the request with `status` (0 ok, else an error code); later calls do nothing.
	void end(std::int64_t status = 0) noexcept
	{
		end_if_active(status);
	}

	std::uint64_t id() const noexcept
	{
		return id_;
	}
	const std::string &tenant() const noexcept
	{
		return tenant_;
	}
	const std::string &agent() const noexcept
	{
		return agent_;
	}
	// Empty when the request has no trace id.
	const std::string &trace_id() const noexcept
	{
		return trace_id_;
	}
	// The traceparent it was given, else the trace id (what request_begin passed).
	const std::string &trace_context() const noexcept
	{
		return trace_context_;
	}
	bool active() const noexcept
	{
		return active_;
	}

      private:
	void end_if_active(std::int64_t status) noexcept
	{
		if (std::exchange(active_, false))
			tailcause_request_end(id_, status);
	}

	std::uint64_t id_;
	std::string tenant_;
	std::string agent_;
	std::string trace_context_;
	std::string trace_id_;
	bool active_ = true;
};

// One stage of a request: stage_begin on construction, stage_end once (end() or destructor).
// Holds the request id, not the Request, so the request may move while the stage runs.
class Stage
{
      public:
	using Kind = StageKind;

	Stage(const Request &request, StageKind kind) : Stage(request.id(), kind, stage_name(kind))
	{
	}

	// A free-form stage (reported as StageKind::other with this name).
	Stage(const Request &request, std::string_view name)
	    : Stage(request.id(), StageKind::other, name)
	{
	}

	// A generation stage that names its model (and provider): exported over OTLP as
	// gen_ai.request.model and gen_ai.provider.name ("provider:model", 32 bytes at most).
	static Stage generation(const Request &request, std::string_view model,
				std::string_view provider = {})
	{
		if (model.empty())
			throw std::invalid_argument("tailcause: model is empty");
		return Stage(request.id(), StageKind::generation,
			     provider.empty() ? std::string(model)
					      : std::string(provider) + ":" + std::string(model));
	}

	Stage(std::uint64_t request_id, StageKind kind, std::string_view name)
	    : request_id_(request_id), kind_(kind),
	      name_(detail::checked_string(name, "stage name"))
	{
		if (name_.empty())
			throw std::invalid_argument("tailcause: stage name is empty");
		tailcause_stage_begin(request_id_, static_cast<std::int64_t>(kind_), name_.c_str());
	}

	Stage(const Stage &) = delete;
	Stage &operator=(const Stage &) = delete;

	Stage(Stage &&other) noexcept
	    : request_id_(other.request_id_), kind_(other.kind_), name_(std::move(other.name_)),
	      active_(std::exchange(other.active_, false))
	{
	}

	Stage &operator=(Stage &&other) noexcept
	{
		if (this != &other) {
			end();
			request_id_ = other.request_id_;
			kind_ = other.kind_;
			name_ = std::move(other.name_);
			active_ = std::exchange(other.active_, false);
		}
		return *this;
	}

	~Stage()
	{
		end();
	}

	void end() noexcept
	{
		if (std::exchange(active_, false))
			tailcause_stage_end(request_id_, static_cast<std::int64_t>(kind_));
	}

	std::uint64_t request_id() const noexcept
	{
		return request_id_;
	}
	StageKind kind() const noexcept
	{
		return kind_;
	}
	const std::string &name() const noexcept
	{
		return name_;
	}
	bool active() const noexcept
	{
		return active_;
	}

      private:
	std::uint64_t request_id_;
	StageKind kind_;
	std::string name_;
	bool active_ = true;
};

// Marks the current thread as working for a request (context_attach) until the scope ends
// (context_detach). Bound to the thread that made it, hence neither copyable nor movable.
class ContextScope
{
      public:
	explicit ContextScope(std::uint64_t request_id) noexcept : request_id_(request_id)
	{
		tailcause_context_attach(request_id_);
	}
	explicit ContextScope(const Request &request) noexcept : ContextScope(request.id())
	{
	}
	ContextScope(const ContextScope &) = delete;
	ContextScope &operator=(const ContextScope &) = delete;
	~ContextScope()
	{
		tailcause_context_detach(request_id_);
	}

      private:
	std::uint64_t request_id_;
};

// One model layer over a batch: layer_begin on construction, layer_end on destruction.
class LayerScope
{
      public:
	LayerScope(std::uint64_t layer, std::uint64_t batch_size) noexcept
	    : layer_(layer), batch_size_(batch_size)
	{
		tailcause_layer_begin(layer_, batch_size_);
	}
	LayerScope(const LayerScope &) = delete;
	LayerScope &operator=(const LayerScope &) = delete;
	~LayerScope()
	{
		tailcause_layer_end(layer_, batch_size_);
	}

      private:
	std::uint64_t layer_;
	std::uint64_t batch_size_;
};

// A cache lookup made for a request: `age` is how old the returned entry was (0 on a miss).
inline void cache_lookup(std::uint64_t request_id, std::string_view cache, CacheResult result,
			 std::chrono::nanoseconds age, std::uint64_t key_hash)
{
	// Checked whether traced or not, so attaching a tracer never changes what the program does;
	// the copy (the NUL terminator) is made only while traced.
	if (cache.find('\0') != std::string_view::npos)
		throw std::invalid_argument("tailcause: cache name contains a NUL byte");
	if (!TAILCAUSE_ENABLED(cache_lookup))
		return;
	const std::string name(cache);
	const auto age_ns = age.count() < 0 ? 0 : static_cast<std::uint64_t>(age.count());
	tailcause_cache_lookup(request_id, name.c_str(), static_cast<std::int64_t>(result), age_ns,
			       key_hash);
}

inline void cache_lookup(const Request &request, std::string_view cache, CacheResult result,
			 std::chrono::nanoseconds age, std::uint64_t key_hash)
{
	cache_lookup(request.id(), cache, result, age, key_hash);
}

// Output token number `index` (0 = first) of a request was emitted.
inline void token(std::uint64_t request_id, std::uint64_t index) noexcept
{
	tailcause_token(request_id, index);
}
inline void token(const Request &request, std::uint64_t index) noexcept
{
	token(request.id(), index);
}

// Entropy (nats or bits, as the caller's model reports it) of an output distribution, sent in
// millionths. Negative or non-finite entropies are rejected.
inline std::uint64_t entropy_to_micro(double entropy)
{
	if (!std::isfinite(entropy) || entropy < 0.0)
		throw std::invalid_argument("tailcause: entropy must be finite and >= 0");
	const double micro = std::round(entropy * 1e6);
	if (micro >= 18446744073709551615.0)
		return UINT64_MAX;
	return static_cast<std::uint64_t>(micro);
}

inline void output_quality(std::uint64_t request_id, double entropy)
{
	const std::uint64_t micro = entropy_to_micro(entropy);
	tailcause_output_quality(request_id, micro);
}
inline void output_quality(const Request &request, double entropy)
{
	output_quality(request.id(), entropy);
}

} // namespace tailcause

#endif // TAILCAUSE_SDK_HPP
