# deep_relu.py N: a dense layer, N relu layers and a classifier head, for the deep-graph tests.
import sys

n = int(sys.argv[1])
print("network deep {\n\tinput x: f32[batch, 16]\n\tinput y: i32[batch]\n\tdense(16)")
for _ in range(n):
    print("\trelu")
print("\tdense(4)\n\tscores = log_softmax(dim=1)\n\tloss nll_loss(scores, y)\n}")
print("train {\n\toptimizer = sgd(lr=0.1)\n\tbatch = 8\n}")
