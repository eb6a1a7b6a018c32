#!/bin/sh
# Regenerates the committed man pages (man/) and shell completions (completions/) from the one
# clap definition. Run it after changing any flag or help text, then commit the result;
# tests/integration/generated.rs fails while they are out of date.
set -eu
cd "$(dirname "$0")/.."
cargo build --quiet --bin kapi
kapi() { cargo run --quiet --bin kapi -- "$@"; }
rm -rf man completions
mkdir -p man completions
kapi man man
kapi completions bash > completions/kapi.bash
kapi completions zsh > completions/_kapi
kapi completions fish > completions/kapi.fish
kapi completions powershell > completions/_kapi.ps1
kapi completions elvish > completions/kapi.elv
echo "regenerated man/ and completions/"
