/* data_files.c: the files of the data sets, which their readers (data_mnist.c, data_cifar.c) and
 * the built-in generator (data_synth.c) share: the names MNIST and CIFAR-10 distribute them under,
 * and freeing files held in memory. The generator depends on this file, not on the readers. */
#include <stdlib.h>

#include "runtime/data_cifar.h"

const char *const rt_mnist_names[MNIST_NFILES] = {
	"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
	"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
};

const char *const rt_cifar_names[CIFAR_NFILES] = {
	"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin",
	"test_batch.bin",
};

void rt_blobs_free(IdxBlob *f, int n)
{
	for (int i = 0; i < n; i++) {
		free(f[i].data);
		f[i].data = NULL;
		f[i].size = 0;
	}
}
