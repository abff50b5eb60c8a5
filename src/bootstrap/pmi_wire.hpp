// SPDX-License-Identifier: BSD-3-Clause
// The simple PMI-1 wire protocol's line format, shared by the client (src/bootstrap) and the
// launcher's server (tools/portico-run): space-separated key=value tokens.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace portico::bootstrap {

using PmiTokens = std::vector<std::pair<std::string_view, std::string_view>>;

// The tokens of one line, as views into it. Only spaces separate tokens (as in MPICH); a token's
// value is everything after its first '=' (empty when it has none).
inline PmiTokens pmi_tokenize(std::string_view line) {
    PmiTokens t;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') ++i;
        if (i >= line.size()) break;
        std::size_t end = line.find(' ', i);
        if (end == std::string_view::npos) end = line.size();
        const std::string_view tok = line.substr(i, end - i);
        const std::size_t eq = tok.find('=');
        if (eq == std::string_view::npos)
            t.emplace_back(tok, std::string_view());
        else
            t.emplace_back(tok.substr(0, eq), tok.substr(eq + 1));
        i = end;
    }
    return t;
}

} // namespace portico::bootstrap
