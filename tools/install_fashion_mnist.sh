#!/bin/sh
# Installs Fashion-MNIST's four files (Xiao, Rasul and Vollgraf) from Debian's
# package dataset-fashion-mnist, which puts them in
# /usr/share/datasets/fashion-mnist/ (the loader's folder when no --data_dir
# is given and Keras' cache is absent: datasets/fashion_mnist.py). apt-get
# checks the package against the archive's signed index; the version is
# pinned. Where the files are already there, does nothing; where apt-get
# cannot run as root, or fails, prints one line saying how to get them and
# exits 0: only paper 003's Fashion-MNIST runs need them.
DIR=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}  # Tests set it.
PACKAGE=dataset-fashion-mnist
VERSION=0.0~git20200523.55506a9-1
HINT="paper 003's Fashion-MNIST runs need $DIR: run 'sudo apt-get install $PACKAGE' (Debian, Ubuntu), or pass --data_dir=<folder of the four .gz files>"

if [ -f "$DIR/train-images-idx3-ubyte.gz" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "$HINT"
  exit 0
fi
if { apt-get install -y -qq "$PACKAGE=$VERSION" >/dev/null 2>&1 ||
     { apt-get update -qq >/dev/null 2>&1 &&
       apt-get install -y -qq "$PACKAGE=$VERSION" >/dev/null 2>&1; }; } &&
   [ -f "$DIR/train-images-idx3-ubyte.gz" ]; then
  echo "installed $PACKAGE $VERSION: Fashion-MNIST in $DIR"
else
  echo "apt-get could not install $PACKAGE=$VERSION; $HINT"
fi
exit 0
