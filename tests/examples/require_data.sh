# Sourced by the example tests: exits 77 (CTest's "skipped") when Debian's
# dataset-fashion-mnist files are not installed, and sets $data to their folder.
data=/usr/share/datasets/fashion-mnist
[ -e "$data/train-images-idx3-ubyte.gz" ] || [ -e "$data/train-images-idx3-ubyte" ] || {
  echo "skipped: $data is missing (package dataset-fashion-mnist)"
  exit 77
}
