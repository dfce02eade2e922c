"""Data-parallel training with TensorFlow's distribution strategies, ready for `gpudeck run`.

    gpudeck run --gpus 0,1 -- python assets/examples/tf_mirrored.py                      # MirroredStrategy
    gpudeck run --gpus 0,1 --launcher per-gpu -- python assets/examples/tf_mirrored.py   # MultiWorkerMirroredStrategy

With the `single` launcher one process sees every chosen GPU and MirroredStrategy replicates the
model on each. With `per-gpu` gpudeck starts one process per GPU and sets TF_CONFIG for each, so
the script switches to MultiWorkerMirroredStrategy (the workers talk over the loopback ports
gpudeck picked).

The data is synthetic (a fixed random linear map plus noise), so nothing is downloaded and the
loss visibly falls. Keras prints its progress lines (`epoch`, step, `loss`), which the Runs tab
draws as a curve; `verbose=2` prints one line per epoch, which suits a log file.
"""

import argparse
import json
import os

import numpy as np
import tensorflow as tf


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=256, help="per GPU")
    p.add_argument("--samples", type=int, default=200_000)
    p.add_argument("--width", type=int, default=2048, help="hidden layer width")
    p.add_argument("--checkpoint-dir", default="checkpoints")
    return p.parse_args()


def strategy():
    """MultiWorkerMirroredStrategy when gpudeck's per-gpu launcher set TF_CONFIG, else MirroredStrategy."""
    if "TF_CONFIG" in os.environ:
        return tf.distribute.MultiWorkerMirroredStrategy()
    if not tf.config.list_physical_devices("GPU"):
        raise SystemExit("TensorFlow sees no GPU: check `gpudeck compat` for this TensorFlow and driver")
    return tf.distribute.MirroredStrategy()


def dataset(samples, batch, features=512, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, features), dtype=np.float32)
    w = rng.standard_normal((features, 1), dtype=np.float32) / np.sqrt(features)
    y = x @ w + 0.01 * rng.standard_normal((samples, 1), dtype=np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(10_000).batch(batch).prefetch(tf.data.AUTOTUNE)


def main():
    args = parse_args()
    strat = strategy()
    replicas = strat.num_replicas_in_sync
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {"index": 0})
    chief = task.get("index", 0) == 0
    if chief:
        print(f"strategy={type(strat).__name__} replicas={replicas}", flush=True)
    with strat.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(512,)),
            tf.keras.layers.Dense(args.width, activation="gelu"),
            tf.keras.layers.Dense(args.width, activation="gelu"),
            tf.keras.layers.Dense(1),
        ])
        model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse", metrics=["mae"])
    # Every worker writes checkpoints (a MultiWorker requirement); only the chief's directory is kept.
    ckpt_dir = args.checkpoint_dir if chief else os.path.join(args.checkpoint_dir, f"worker-{task.get('index')}")
    callbacks = [tf.keras.callbacks.BackupAndRestore(backup_dir=ckpt_dir)]
    data = dataset(args.samples, args.batch_size * replicas)
    model.fit(data, epochs=args.epochs, verbose=2 if chief else 0, callbacks=callbacks)
    if chief:
        model.save(os.path.join(args.checkpoint_dir, "model.keras"))
        print(f"saved {args.checkpoint_dir}/model.keras", flush=True)


if __name__ == "__main__":
    main()
