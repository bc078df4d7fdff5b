// SPDX-License-Identifier: MIT
// A program that calls every tailcause probe through sdk.hpp with values derived from the
// iteration number, so a tracer's output can be checked against tests/sdk/check_events.py.
// Each iteration prints the semaphores as this process sees them (the test reads them to show
// that probes are enabled only while a tracer is attached).
//
//   sdk_user [--iterations N (0: until killed)] [--interval-ms M] [--base-id ID]
#include <tailcause/sdk.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace
{

struct Options {
	std::uint64_t iterations = 0;
	unsigned interval_ms = 20;
	std::uint64_t base_id = 0x5d5000000000ULL;
};

Options parse(int argc, char **argv)
{
	Options o;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!std::strcmp(argv[i], "--iterations"))
			o.iterations = std::strtoull(argv[i + 1], nullptr, 0);
		else if (!std::strcmp(argv[i], "--interval-ms"))
			o.interval_ms =
				static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 0));
		else if (!std::strcmp(argv[i], "--base-id"))
			o.base_id = std::strtoull(argv[i + 1], nullptr, 0);
		else {
			std::fprintf(stderr, "unknown flag %s\n", argv[i]);
			std::exit(2);
		}
	}
	return o;
}

// The values check_events.py expects for iteration i (keep the two in step).
std::string trace_id_for(std::uint64_t id)
{
	char buf[33];
	std::snprintf(buf, sizeof(buf), "0af7651916cd43dd%016" PRIx64, id);
	return buf;
}

void one_request(std::uint64_t i, std::uint64_t id)
{
	const std::string tenant = "tenant-" + std::to_string(i % 3);
	std::optional<std::string> trace;
	if (i % 4 != 3)
		trace = trace_id_for(id);
	tailcause::Request request(id, tenant, "agent-cpp",
				   trace ? std::optional<std::string_view>(*trace) : std::nullopt);
	{
		tailcause::Stage stage(request, tailcause::StageKind::retrieval);
		tailcause::cache_lookup(request, "vectors",
					static_cast<tailcause::CacheResult>(i % 3),
					std::chrono::nanoseconds(1000 * i + 7), id * 31);
	}
	{
		tailcause::Stage stage(request, "rerank");
	}
	// Generation runs on a worker thread that carries the request's context.
	std::thread worker([&] {
		tailcause::ContextScope context(request);
		tailcause::Stage stage(request, tailcause::StageKind::generation);
		for (std::uint64_t k = 0; k < 3; ++k) {
			tailcause::LayerScope layer(k, 8 + i % 4);
			tailcause::token(request, k);
		}
	});
	worker.join();
	tailcause::output_quality(request, static_cast<double>(i % 7) * 0.125);
	request.end(i % 5 == 0 ? 3 : 0);
}

} // namespace

int main(int argc, char **argv)
{
	const Options o = parse(argc, argv);
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	for (std::uint64_t i = 0; o.iterations == 0 || i < o.iterations; ++i) {
		one_request(i, o.base_id + i);
		std::printf("iteration %" PRIu64 " sem request_begin=%u token=%u cache_lookup=%u\n",
			    i, tailcause_request_begin_semaphore, tailcause_token_semaphore,
			    tailcause_cache_lookup_semaphore);
		std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
	}
	return 0;
}
