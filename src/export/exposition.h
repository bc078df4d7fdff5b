// SPDX-License-Identifier: Apache-2.0
// Renders a MetricSet in the Prometheus text format (0.0.4) or OpenMetrics 1.0 (with
// exemplars). Pure functions: the HTTP layer chooses the format from the Accept header.
#pragma once

#include <string>
#include <string_view>

#include "core/record/metrics.h"

namespace tailcause::exporter {

enum class Format { PrometheusText, OpenMetrics };

std::string render(const core::MetricSet& set, Format format);

// Content-Type header value for a format.
std::string_view content_type(Format format);

// OpenMetrics when the Accept header asks for application/openmetrics-text, else text.
Format negotiate(std::string_view accept_header);

}  // namespace tailcause::exporter
