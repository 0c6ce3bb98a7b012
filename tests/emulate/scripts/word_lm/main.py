"""A word-level RNN language model trained the way CUDA example scripts train one (written
for the emulation tests in the style of pytorch/examples' word_language_model): a `--cuda`
flag, batchified token streams, truncated BPTT with repackaged hidden state, gradient
clipping, a hand-written SGD update on `p.data`, the best model saved with `torch.save` and
loaded back for the test pass.

python main.py [--cuda] [--model LSTM|GRU|RNN_TANH] [--epochs N] ...
``build()`` is a ``migrate ops --torch word_lm.main:build`` factory for one training step.
"""

import argparse
import math
import time

import torch
import torch.nn as nn


class Corpus:
    """A synthetic corpus: sentences drawn from a small grammar (deterministic)."""

    def __init__(self, vocab=64, lines=(160, 40, 40), seed=1):
        g = torch.Generator().manual_seed(seed)
        self.words = [f"w{i}" for i in range(vocab)] + ["<eos>"]
        self.index = {w: i for i, w in enumerate(self.words)}
        self.train, self.valid, self.test = (self.tokenize(n, g) for n in lines)

    def tokenize(self, lines, g):
        ids = []
        for _ in range(lines):
            start = int(torch.randint(0, len(self.words) - 1, (1,), generator=g))
            length = int(torch.randint(4, 12, (1,), generator=g))
            ids += [(start + 3 * k) % (len(self.words) - 1) for k in range(length)]
            ids.append(self.index["<eos>"])
        return torch.tensor(ids, dtype=torch.long)


class RNNModel(nn.Module):
    """Encoder, recurrent module, decoder (weights tied when asked)."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.2, tie_weights=False):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity="tanh", dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
        self.init_weights()

    def init_weights(self):
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (
                weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid),
            )
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz, device):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="RNN/LSTM/GRU language model")
    parser.add_argument("--model", default="LSTM", help="RNN_TANH, LSTM, GRU")
    parser.add_argument("--emsize", type=int, default=32)
    parser.add_argument("--nhid", type=int, default=32)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=5)  # 20 makes this tiny GRU chaotic
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--bptt", type=int, default=12)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--tied", action="store_true")
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--cuda", action="store_true", help="use CUDA")
    parser.add_argument("--log-interval", type=int, default=4)
    parser.add_argument("--save", default="model.pt")
    return parser.parse_args(argv)


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    if torch.cuda.is_available() and not args.cuda:
        print("WARNING: You have a CUDA device, so you should probably run with --cuda")
    device = torch.device("cuda" if args.cuda else "cpu")

    corpus = Corpus()
    eval_batch_size = 4
    train_data = batchify(corpus.train, args.batch_size, device)
    val_data = batchify(corpus.valid, eval_batch_size, device)
    test_data = batchify(corpus.test, eval_batch_size, device)
    ntokens = len(corpus.words)
    model = RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied).to(
        device
    )
    criterion = nn.NLLLoss()

    def evaluate(data_source):
        model.eval()
        total_loss = 0.0
        hidden = model.init_hidden(eval_batch_size)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, args.bptt):
                data, targets = get_batch(data_source, i, args.bptt)
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    def train(lr):
        model.train()
        total_loss, start = 0.0, time.time()
        hidden = model.init_hidden(args.batch_size)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i, args.bptt)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            total_loss += loss.item()
            if batch % args.log_interval == 0 and batch > 0:
                cur_loss = total_loss / args.log_interval
                print(
                    f"| batch {batch:3d} | lr {lr:02.2f} | ms/batch "
                    f"{(time.time() - start) * 1000 / args.log_interval:5.2f} | loss "
                    f"{cur_loss:5.2f} | ppl {math.exp(cur_loss):8.2f}"
                )
                total_loss, start = 0.0, time.time()

    lr, best_val_loss = args.lr, None
    for epoch in range(1, args.epochs + 1):
        train(lr)
        val_loss = evaluate(val_data)
        print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | valid ppl {math.exp(val_loss):8.2f}")
        if best_val_loss is None or val_loss < best_val_loss:
            with open(args.save, "wb") as f:
                torch.save(model, f)
            best_val_loss = val_loss
        else:
            lr /= 4.0

    with open(args.save, "rb") as f:
        model = torch.load(f, weights_only=False)
        if args.model in ("RNN_TANH", "LSTM", "GRU"):
            model.rnn.flatten_parameters()
    test_loss = evaluate(test_data)
    print(
        f"| end of training | test loss {test_loss:5.2f} | parameters on "
        f"{next(model.parameters()).device.type}"
    )
    if args.cuda:
        print(f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")


def build():
    """One training step of the LSTM model, for `migrate ops --torch ... --train`."""
    torch.manual_seed(0)
    corpus = Corpus()
    model = RNNModel("LSTM", len(corpus.words), 32, 32, 2)
    data, targets = get_batch(batchify(corpus.train, 8, "cpu"), 0, 12)
    return {
        "model": model,
        "args": (data, model.init_hidden(8)),
        "loss": lambda out: nn.NLLLoss()(out[0], targets),
    }


if __name__ == "__main__":
    main()
