#!/usr/bin/env bash
# Installs the Debian 12 packages the build and the tests need (only those missing), and the
# pinned npm packages of the tokenizer oracle. Runs as root, or through sudo when not root.
# clang 14 and its compiler-rt (libclang_rt.fuzzer, asan, ubsan) build the libFuzzer targets of
# fuzz/ that scripts/fuzz.sh runs. poppler-utils (pdfinfo, pdftoppm) renders PDF pages for the
# ocr command, as a separate program (nothing of it is linked).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libutf8proc-dev libpcre2-dev
  libboost1.81-dev zlib1g-dev
  libcpp-httplib-dev libgtest-dev
  libjpeg62-turbo-dev libpng-dev libwebp-dev poppler-utils
  clang clang-14 libclang-rt-14-dev
  # Python jinja2: the oracle of the real chat-template test (tests/text/chat_template_real_test.cc)
  python3-jinja2
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm run the tokenizer oracle. A machine may already have them from another source
# (whose nodejs bundles npm and conflicts with Debian's npm package): only install when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
