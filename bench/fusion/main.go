// Command fusion measures a hybrid index's fusion on the public
// benchmarks for a grid of vector weights and similarity floors, so that a
// weight is chosen where both benchmarks agree. Embedding every turn
// again for each point of the grid would take LongMemEval's half an hour
// each time; the vectors are kept in a cache file instead (one a model,
// made on the first run, reused after), and each point replays the
// conversations into a fresh in-memory index, keyword terms and all:
//
//	go run ./bench/fusion -locomo locomo-dev.zip -longmemeval longmemeval-s-dev.jsonl.gz \
//		-embedder e5-small -weights 0.3,0.4,0.5 -floors 0.7,0.75,0.8
//
// -config measures the embedder of a configuration's index instead, such
// as an encoder that scripts/models/serve-encoder serves before anyone
// converts it into the binary.
//
// Its figures are for choosing; `hector eval` (vectors in int8, in the
// file) gives the figures of record, within 0.002 of these.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/e5"
	"github.com/hectormem/hector/pkg/embed/minilm"
	"github.com/hectormem/hector/pkg/eval"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

func main() {
	locomo := flag.String("locomo", "", "LoCoMo's file (or a zip of its conversations)")
	lme := flag.String("longmemeval", "", "LongMemEval's longmemeval_s (JSON array or lines, gzipped or not)")
	jsonl := flag.String("jsonl", "", "a set in hector eval's JSON lines format (pkg/eval/testdata/firsthour.jsonl)")
	model := flag.String("embedder", "e5-small", "the built-in encoder: e5-small or minilm")
	configPath := flag.String("config", "", "a configuration file whose index's embedder to measure instead (an API's, such as scripts/models/serve-encoder's)")
	cacheDir := flag.String("cache", filepath.Join(os.TempDir(), "hector-fusion"), "where the vectors are kept between runs")
	weights := flag.String("weights", "0.3,0.4,0.5", "the vector weights to measure, comma-separated")
	floors := flag.String("floors", "", "the similarity floors to measure, comma-separated (default: the embedder's)")
	answers := flag.String("answers", "", "a directory to write each run's questions, figures and results to, as hector eval --answers does (a file a set, weight and floor)")
	byCategory := flag.String("category-metrics", "hit@1,recall@5,recall_all@5,ndcg_any@5",
		"the metrics shown for each category, of those the benchmark has (the default bar's)")
	flag.Parse()
	if *locomo == "" && *lme == "" && *jsonl == "" {
		log.Fatal("fusion: give -locomo, -longmemeval, -jsonl or several")
	}
	var e embed.Embedder
	var err error
	switch {
	case *configPath != "":
		e, err = configured(*configPath)
	case *model == "e5-small":
		e, err = e5.New()
	case *model == "minilm":
		e, err = minilm.New()
	default:
		log.Fatalf("fusion: -embedder %q: give e5-small or minilm", *model)
	}
	if err != nil {
		log.Fatal(err)
	}
	ws, err := numbers(*weights)
	if err != nil {
		log.Fatalf("fusion: -weights: %v", err)
	}
	fs, err := numbers(*floors)
	if err != nil {
		log.Fatalf("fusion: -floors: %v", err)
	}
	if len(fs) == 0 {
		fs = []float64{embed.SimilarityFloor(e)}
	}
	cache, err := openCache(*cacheDir, e)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := cache.close(); err != nil {
			log.Printf("fusion: the vectors made this run are not all kept: %v", err)
		}
	}()

	ctx := context.Background()
	out := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	if *answers != "" {
		if err := os.MkdirAll(*answers, 0o755); err != nil {
			log.Fatalf("fusion: -answers: %v", err)
		}
	}
	for _, set := range []struct {
		path string
		load func(string, []byte) (*eval.Dataset, error)
	}{{*locomo, eval.DefaultLimits.LoadLoCoMo}, {*lme, eval.DefaultLimits.LoadLongMemEval}, {*jsonl, eval.DefaultLimits.LoadJSONL}} {
		if set.path == "" {
			continue
		}
		raw, err := eval.DefaultLimits.ReadFile(set.path)
		if err != nil {
			log.Fatal(err)
		}
		d, err := set.load(set.path, raw)
		if err != nil {
			log.Fatal(err)
		}
		shown := slices.DeleteFunc(strings.Split(*byCategory, ","), func(m string) bool { return !slices.Contains(d.Metrics, m) })
		header := false
		for _, f := range fs {
			for _, w := range ws {
				var o eval.Options
				var written *eval.AnswerFile
				if *answers != "" {
					name := filepath.Join(*answers, fmt.Sprintf("%s-w%.2f-f%.2f.jsonl", d.Format, w, f))
					if written, err = eval.CreateAnswerFile(name); err != nil {
						log.Fatalf("fusion: -answers: %v", err)
					}
					o.Answered = written.Answered
				}
				r, err := run(ctx, d, cache, index.Fusion{VectorWeight: w, SimilarityFloor: f}, o)
				if err != nil {
					log.Fatal(err)
				}
				if written != nil {
					if err := written.Close(); err != nil {
						log.Fatalf("fusion: -answers: %v", err)
					}
				}
				if !header {
					fmt.Fprintf(out, "%s (%d questions)\tweight\tfloor\t%s\t%s\n", d.Format, r.Overall.Questions, strings.Join(r.Metrics, "\t"), categoryNames(r, shown))
					header = true
				}
				fmt.Fprintf(out, "\t%.2f\t%.2f\t%s\t%s\n", w, f, values(r.Metrics, r.Overall), categoryValues(r, shown))
				log.Printf("fusion: %s, weight %.2f, floor %.2f: done", d.Format, w, f)
			}
		}
		fmt.Fprintln(out)
		out.Flush()
	}
}

// run replays d into a fresh in-memory hybrid index fused by f, as
// `hector eval` does, and asks its questions.
func run(ctx context.Context, d *eval.Dataset, e embed.Embedder, f index.Fusion, o eval.Options) (*eval.Report, error) {
	sessions := session.NewInMemoryService()
	idx, err := index.NewHybrid(e, index.WithSessions(sessions), index.WithFusion(f),
		index.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		return nil, err
	}
	defer idx.Close()
	if err := idx.Start(ctx); err != nil {
		return nil, err
	}
	return eval.Run(ctx, d, sessions, idx, o)
}

// configured is the embedder of the index that the configuration at path
// describes, as `hector serve` would make it.
func configured(path string) (embed.Embedder, error) {
	cfg, err := config.Load(path, config.Overrides{})
	if err != nil {
		return nil, err
	}
	name := cfg.Server.Index.Embedder
	e, err := app.BuildEmbedder(cfg.Embedders[name])
	if err != nil {
		return nil, fmt.Errorf("embedders.%s: %w", name, err)
	}
	return e, nil
}

func numbers(list string) ([]float64, error) {
	var out []float64
	for s := range strings.SplitSeq(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// categoryNames and categoryValues: the metrics shown of each category
// scored with the others.
func categoryNames(r *eval.Report, metrics []string) string {
	var names []string
	for _, c := range r.Categories {
		if c.Apart {
			continue
		}
		for _, m := range metrics {
			names = append(names, fmt.Sprintf("%s (%d) %s", c.Name, c.Questions, m))
		}
	}
	return strings.Join(names, "\t")
}

func categoryValues(r *eval.Report, metrics []string) string {
	var vs []string
	for _, c := range r.Categories {
		if !c.Apart {
			vs = append(vs, values(metrics, c))
		}
	}
	return strings.Join(vs, "\t")
}

func values(metrics []string, f eval.Figures) string {
	vs := make([]string, len(metrics))
	for i, m := range metrics {
		vs[i] = fmt.Sprintf("%.3f", f.Values[m])
	}
	return strings.Join(slices.Clip(vs), "\t")
}
