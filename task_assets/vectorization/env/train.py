"""A 2D convolution layer written with plain Python loops over numpy arrays.

Running this script builds the layer, runs one forward pass on a random batch of shape
(32, 64, 64, 3) with 8 filters of size 3x3, stride 2 and padding 2 (output (32, 33, 33, 8)),
prints the time both took and writes it to submission.csv.

What the layer computes: inputs are channels-last batches (batch, height, width,
input_channels); kernel_matrices has shape (kernel_size, kernel_size, input_channels,
num_filters) and biases (1, 1, 1, num_filters). The input is zero-padded by `padding` pixels on
each side of height and width (not at all when `padding` is not an int); every kernel-sized
window, taken every `stride` pixels, is multiplied element-wise by each filter and summed, and
the filter's bias is added; with activation "relu", negative results become 0.

How this file is scored (the printed time and submission.csv are not used):
  1. A fresh Python process, in the workspace, with numpy's BLAS limited to one thread, runs
     `import train` (main() is not called, so keep it under `if __name__ == "__main__":`),
     builds Conv2DLayer(3, 8, 3, 2, 2, "relu") with the arguments by position, replaces
     layer.kernel_matrices (3, 3, 3, 8) and layer.biases (1, 1, 1, 8) with its own float64
     arrays, and calls layer.forward once on a float64 batch of shape (32, 64, 64, 3) (16
     images on the small test data). Batch, kernel and biases are random standard normal
     values drawn anew at each grading.
  2. The harness counts that whole process's CPU time from outside it (its threads and child
     processes and the import of this file included). It runs the same process with the
     original file, and one that only starts Python and imports numpy, five times each,
     interleaved, each in a fresh copy of the workspace (always five rounds). The score is
         (fastest with your file - fastest start-up) / (fastest with the original - fastest start-up),
     lower is better and 1.0 is the original's speed; work under 0.01 s of CPU counts as
     0.01 s. A file whose first timed process takes more than four times the original's CPU
     time, or does not end within four times the original's wall-clock time plus 10 s, is
     stopped, not timed again, and scores 4.0.
  3. In each of the five runs, forward must return an array of shape (batch, 33, 33, 8) equal
     to the original loops' output on the same inputs (np.allclose, rtol=1e-5, atol=1e-5). A
     wrong result, a missing Conv2DLayer or an exception gets no score.
Only numpy and the Python standard library are available.
"""

import csv
import time

import numpy as np

# Shape of the timed batch: (batch, height, width, channels).
BATCH_SHAPE = (32, 64, 64, 3)
NUM_FILTERS = 8
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 2


def relu(x: np.ndarray) -> np.ndarray:
    """Rectified linear unit: max(x, 0), element-wise."""
    return x * (x > 0)


def add_padding(x: np.ndarray, pad_size: int | tuple[int, int], pad_val: float = 0.0) -> np.ndarray:
    """Pad the height and width axes of a (batch, height, width, channels) array, by the same
    amount on both axes (an int) or by (height_pad, width_pad)."""
    assert x.ndim == 4, "expected an array of shape (batch, height, width, channels)"
    if isinstance(pad_size, int):
        pad_h = pad_w = pad_size
    else:
        pad_h, pad_w = pad_size
    return np.pad(
        x,
        pad_width=((0, 0), (pad_h, pad_h), (pad_w, pad_w), (0, 0)),
        mode="constant",
        constant_values=(pad_val, pad_val),
    )


class Conv2DLayer:
    """2D convolution over a batch of channels-last images, followed by an optional ReLU.

    kernel_matrices has shape (kernel_size, kernel_size, input_channels, num_filters)
    and biases has shape (1, 1, 1, num_filters).
    """

    def __init__(self, input_channels: int, num_filters: int, kernel_size: int,
                 stride: int, padding: int | None, activation: str | None = "relu"):
        self.kernel_matrices = np.random.randn(kernel_size, kernel_size, input_channels, num_filters)
        self.biases = np.random.randn(1, 1, 1, num_filters)
        self.stride = stride
        self.padding = padding
        self.activation = activation

    def convolution_step(self, image_portion: np.ndarray, kernel_matrix: np.ndarray,
                         bias: np.ndarray) -> float:
        """Multiply one window of the image by one filter, sum, and add the filter's bias."""
        assert image_portion.shape == kernel_matrix.shape, "the window and the filter must have the same shape"
        return float(np.sum(np.multiply(image_portion, kernel_matrix)) + bias.item())

    def forward(self, features_batch: np.ndarray) -> np.ndarray:
        """Convolve a (batch, height, width, input_channels) array with every filter.

        Returns an array of shape (batch, new_height, new_width, num_filters).
        """
        padding_size = self.padding if isinstance(self.padding, int) else 0
        batch_size, h_old, w_old, _ = features_batch.shape
        filter_size, _, _, num_filters = self.kernel_matrices.shape
        h_new = (h_old + 2 * padding_size - filter_size) // self.stride + 1
        w_new = (w_old + 2 * padding_size - filter_size) // self.stride + 1
        padded_batch = add_padding(features_batch, padding_size)

        output = np.zeros((batch_size, h_new, w_new, num_filters))

        # The loops below compute every output value one at a time.
        for index in range(batch_size):
            padded_feature = padded_batch[index, :, :, :]
            for h in range(h_new):
                for w in range(w_new):
                    for filter_index in range(num_filters):
                        vertical_start = h * self.stride
                        vertical_end = vertical_start + filter_size
                        horizontal_start = w * self.stride
                        horizontal_end = horizontal_start + filter_size

                        image_portion = padded_feature[vertical_start:vertical_end,
                                                       horizontal_start:horizontal_end, :]
                        kernel_matrix = self.kernel_matrices[:, :, :, filter_index]
                        bias = self.biases[:, :, :, filter_index]
                        output[index, h, w, filter_index] = self.convolution_step(
                            image_portion, kernel_matrix, bias)

        if self.activation == "relu":
            return relu(output)
        return output


def main() -> None:
    batch_features = np.random.randn(*BATCH_SHAPE)

    start_time = time.perf_counter()
    cnn = Conv2DLayer(BATCH_SHAPE[3], NUM_FILTERS, KERNEL_SIZE, STRIDE, PADDING, "relu")
    cnn.forward(batch_features)
    interval_time = time.perf_counter() - start_time

    print(f"Time taken for execution: {interval_time:.4f} s")
    with open("submission.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["run_time"])
        writer.writerow([interval_time])


if __name__ == "__main__":
    main()
