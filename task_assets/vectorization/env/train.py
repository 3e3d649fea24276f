"""A 2D convolution layer written with plain Python loops over numpy arrays.

Running this script builds the layer, runs one forward pass on a random batch, prints the time
both took and writes it to submission.csv.
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
