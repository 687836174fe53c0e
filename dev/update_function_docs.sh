#!/usr/bin/env bash
# Regenerates docs/functions.md, the SQL function reference, from each function's DataFusion
# `Documentation` (rendered by `datafusion_anonymity::docs::function_docs_markdown`), as
# DataFusion's own dev/update_function_docs.sh does. The test
# `function_reference_is_generated_from_the_documentation` fails while the file is stale; with
# UPDATE_FUNCTION_DOCS set it writes the file instead.
set -euo pipefail
cd "$(dirname "$0")/.."
UPDATE_FUNCTION_DOCS=1 cargo test --test integration --quiet \
    function_reference_is_generated_from_the_documentation
echo "dev/update_function_docs.sh: wrote docs/functions.md"
