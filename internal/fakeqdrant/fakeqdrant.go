// Package fakeqdrant is an in-process Qdrant for tests: a gRPC server that
// implements the Collections and Points calls Hector's Qdrant store makes,
// with Qdrant's semantics for them (cosine scores, keyword and integer
// payload filters, upsert by ID), so the real go-client is exercised over
// the real wire protocol.
package fakeqdrant

import (
	"cmp"
	"context"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Server is a running fake. Its fields are for tests to inspect.
type Server struct {
	Host string
	Port int

	mu          sync.Mutex
	collections map[string]*collection
	// Filters records the payload keys every Query and Delete filtered on, in order.
	Filters [][]string
}

// The two services share method names (Get, Delete), so each has its own type.
type (
	collectionsAPI struct {
		qdrant.UnimplementedCollectionsServer
		*Server
	}
	pointsAPI struct {
		qdrant.UnimplementedPointsServer
		*Server
	}
)

type collection struct {
	dims    uint64
	points  map[string]*point
	indexes map[string]qdrant.FieldType
}

type point struct {
	vector  []float32
	payload map[string]*qdrant.Value
}

// Start runs a fake on a loopback port until t ends.
func Start(t testing.TB) *Server {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Host: "127.0.0.1", Port: lis.Addr().(*net.TCPAddr).Port, collections: map[string]*collection{}}
	g := grpc.NewServer()
	qdrant.RegisterCollectionsServer(g, collectionsAPI{Server: s})
	qdrant.RegisterPointsServer(g, pointsAPI{Server: s})
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return s
}

// Points returns how many points a collection holds.
func (s *Server) Points(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.collections[name]; c != nil {
		return len(c.points)
	}
	return 0
}

// Index returns the type of a collection's payload index on field, if it has one.
func (s *Server) Index(name, field string) (qdrant.FieldType, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.collections[name]; c != nil {
		t, ok := c.indexes[field]
		return t, ok
	}
	return 0, false
}

func (s *Server) get(name string) (*collection, error) {
	c := s.collections[name]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

func (s collectionsAPI) CollectionExists(ctx context.Context, req *qdrant.CollectionExistsRequest) (*qdrant.CollectionExistsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.collections[req.GetCollectionName()]
	return &qdrant.CollectionExistsResponse{Result: &qdrant.CollectionExists{Exists: ok}}, nil
}

func (s collectionsAPI) Create(ctx context.Context, req *qdrant.CreateCollection) (*qdrant.CollectionOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.collections[req.GetCollectionName()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Wrong input: Collection `%s` already exists!", req.GetCollectionName())
	}
	params := req.GetVectorsConfig().GetParams()
	if params == nil || params.GetSize() == 0 || params.GetDistance() != qdrant.Distance_Cosine {
		return nil, status.Error(codes.InvalidArgument, "this fake supports one unnamed cosine vector per point")
	}
	s.collections[req.GetCollectionName()] = &collection{dims: params.GetSize(), points: map[string]*point{}, indexes: map[string]qdrant.FieldType{}}
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (s collectionsAPI) Get(ctx context.Context, req *qdrant.GetCollectionInfoRequest) (*qdrant.GetCollectionInfoResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	n := uint64(len(c.points))
	return &qdrant.GetCollectionInfoResponse{Result: &qdrant.CollectionInfo{
		Status:      qdrant.CollectionStatus_Green,
		PointsCount: &n,
		Config: &qdrant.CollectionConfig{Params: &qdrant.CollectionParams{
			VectorsConfig: qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: c.dims, Distance: qdrant.Distance_Cosine}),
		}},
	}}, nil
}

func (s pointsAPI) CreateFieldIndex(ctx context.Context, req *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	c.indexes[req.GetFieldName()] = req.GetFieldType()
	return completed(), nil
}

func completed() *qdrant.PointsOperationResponse {
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}
}

func vectorOf(v *qdrant.Vectors) []float32 {
	vec := v.GetVector()
	if d := vec.GetDense(); d != nil {
		return d.GetData()
	}
	//lint:ignore SA1019 clients older than the dense field send vectors this way
	return vec.GetData()
}

func idOf(id *qdrant.PointId) string {
	if u := id.GetUuid(); u != "" {
		return u
	}
	return strconv.FormatUint(id.GetNum(), 10)
}

func (s pointsAPI) Upsert(ctx context.Context, req *qdrant.UpsertPoints) (*qdrant.PointsOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	for _, p := range req.GetPoints() {
		vec := vectorOf(p.GetVectors())
		if uint64(len(vec)) != c.dims {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.dims, len(vec))
		}
		c.points[idOf(p.GetId())] = &point{vector: slices.Clone(vec), payload: p.GetPayload()}
	}
	return completed(), nil
}

// matches applies a filter of "must" keyword and integer matches, the only
// kind Hector sends, and records which keys it filtered on.
func (s *Server) matches(f *qdrant.Filter, p *point) bool {
	for _, cond := range f.GetMust() {
		fc := cond.GetField()
		if fc == nil {
			return false
		}
		v := p.payload[fc.GetKey()]
		switch m := fc.GetMatch().GetMatchValue().(type) {
		case *qdrant.Match_Keyword:
			if v.GetStringValue() != m.Keyword {
				return false
			}
		case *qdrant.Match_Integer:
			if _, ok := v.GetKind().(*qdrant.Value_IntegerValue); !ok || v.GetIntegerValue() != m.Integer {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (s *Server) record(f *qdrant.Filter) {
	var keys []string
	for _, cond := range f.GetMust() {
		keys = append(keys, cond.GetField().GetKey())
	}
	s.Filters = append(s.Filters, keys)
}

func (s pointsAPI) Delete(ctx context.Context, req *qdrant.DeletePoints) (*qdrant.PointsOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	f := req.GetPoints().GetFilter()
	if f == nil {
		return nil, status.Error(codes.InvalidArgument, "this fake deletes by filter only")
	}
	s.record(f)
	for id, p := range c.points {
		if s.matches(f, p) {
			delete(c.points, id)
		}
	}
	return completed(), nil
}

func (s pointsAPI) Query(ctx context.Context, req *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	q := req.GetQuery().GetNearest().GetDense().GetData()
	if uint64(len(q)) != c.dims {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.dims, len(q))
	}
	s.record(req.GetFilter())
	var hits []*qdrant.ScoredPoint
	for id, p := range c.points {
		if !s.matches(req.GetFilter(), p) {
			continue
		}
		hit := &qdrant.ScoredPoint{Id: qdrant.NewIDUUID(id), Score: cosine(q, p.vector)}
		if req.GetWithPayload().GetEnable() {
			hit.Payload = p.payload
		}
		hits = append(hits, hit)
	}
	slices.SortFunc(hits, func(a, b *qdrant.ScoredPoint) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.GetId().GetUuid(), b.GetId().GetUuid()))
	})
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = 10
	}
	return &qdrant.QueryResponse{Result: hits[:min(limit, len(hits))]}, nil
}

func cosine(a, b []float32) float32 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(na*nb))
}
