// SPDX-License-Identifier: BSD-3-Clause
// Error explanations (docs/GASNET.md, "Rules"): a core call that fails says why on stderr, at most
// 20 times per process, then once that further explanations are suppressed. (report() once called
// itself instead of printing, so nothing was ever said.) One node; stderr goes to a temporary
// file while the failing calls run.
#include <gasnet.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

#include "test_util.h"

int main(int argc, char **argv) {
    GASNET_SAFE(gasnet_init(&argc, &argv));
    std::fflush(stderr);
    std::FILE *capture = std::tmpfile();
    CHECK(capture != nullptr);
    const int saved = dup(STDERR_FILENO);
    CHECK(saved >= 0 && dup2(fileno(capture), STDERR_FILENO) == STDERR_FILENO);
    // A segment size that is not a multiple of the page size: GASNET_ERR_BAD_ARG, explained.
    for (int i = 0; i < 25; ++i) CHECK_EQ(gasnet_attach(nullptr, 0, GASNET_PAGESIZE + 1, 0), GASNET_ERR_BAD_ARG);
    std::fflush(stderr);
    CHECK(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
    close(saved);

    std::rewind(capture);
    int explained = 0, suppressed = 0, other = 0;
    char line[1024];
    // Portico's one log format: process, rank, layer, level.
    const std::string prefix = "portico[" + std::to_string(getpid()) + "] rank 0 gasnet error: ";
    while (std::fgets(line, sizeof line, capture)) {
        const std::string l(line);
        if (l.find(prefix + "gasnet_attach: segsize") == 0)
            ++explained;
        else if (l == prefix + "(further error explanations suppressed)\n")
            ++suppressed;
        else {
            std::fprintf(stderr, "unexpected line on stderr: %s", line);
            ++other;
        }
    }
    std::fclose(capture);
    CHECK_EQ(explained, 20);
    CHECK_EQ(suppressed, 1);
    CHECK_EQ(other, 0);
    GASNET_SAFE(gasnet_attach(nullptr, 0, GASNET_PAGESIZE, 0));
    std::printf("report_test: ok\n");
    gasnet_exit(0);
    return 0;
}
