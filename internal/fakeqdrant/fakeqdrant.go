// Package fakeqdrant is an in-process Qdrant for tests: a gRPC server that
// implements the calls Hector's Qdrant store makes, with Qdrant's semantics
// for them, so the real go-client is exercised over the real wire protocol:
// named dense vectors scored by cosine, sparse vectors scored by dot
// product with the IDF modifier, the Query API's prefetches fused by
// reciprocal rank fusion, keyword, integer and has-ID filters, scrolling by
// ID with next-page offsets, collection metadata, and aliases switched
// atomically. Requests Qdrant would refuse are refused the way it does.
package fakeqdrant

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Server is a running fake.
type Server struct {
	Host string
	Port int

	mu          sync.Mutex
	collections map[string]*collection
	aliases     map[string]string
	requests    []Request
	down        bool
}

// Request is what one filtered request asked for: its method and the
// payload keys (or "has_id") its filter required, one list per filter it
// carried (a query with prefetches carries several).
type Request struct {
	Method  string
	Filters [][]string
}

// The services share method names (Get, Delete), so each has its own type.
type (
	qdrantAPI struct {
		qdrant.UnimplementedQdrantServer
		*Server
	}
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
	dense    map[string]uint64 // named dense vectors and their sizes
	sparse   map[string]qdrant.Modifier
	metadata map[string]*qdrant.Value
	points   map[string]*point
	indexes  map[string]*qdrant.CreateFieldIndexCollection
}

type point struct {
	id      *qdrant.PointId
	dense   map[string][]float32
	sparse  map[string]map[uint32]float32
	payload map[string]*qdrant.Value
}

// Start runs a fake on a loopback port until t ends.
func Start(t testing.TB) *Server {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Host: "127.0.0.1", Port: lis.Addr().(*net.TCPAddr).Port, collections: map[string]*collection{}, aliases: map[string]string{}}
	g := grpc.NewServer(grpc.UnaryInterceptor(s.outage))
	qdrant.RegisterQdrantServer(g, qdrantAPI{Server: s})
	qdrant.RegisterCollectionsServer(g, collectionsAPI{Server: s})
	qdrant.RegisterPointsServer(g, pointsAPI{Server: s})
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return s
}

// SetDown makes every call fail as an unreachable server's would (true)
// or answer again (false).
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *Server) outage(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	return handler(ctx, req)
}

// Requests returns the filtered requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Points returns how many points the collection (or alias) name holds.
func (s *Server) Points(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, err := s.get(name); err == nil {
		return len(c.points)
	}
	return 0
}

// Dump returns everything the fake holds, one line per collection and per
// point, with every payload value and vector, in a stable order: what a
// test reads to see what is stored, not what the API answers.
func (s *Server) Dump() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, c := range s.collections {
		out = append(out, fmt.Sprintf("collection %s metadata %s", name, values(c.metadata)))
		for id, p := range c.points {
			out = append(out, fmt.Sprintf("point %s %s payload %s dense %v sparse %v", name, id, values(p.payload), p.dense, p.sparse))
		}
	}
	for alias, target := range s.aliases {
		out = append(out, "alias "+alias+" "+target)
	}
	slices.Sort(out)
	return out
}

// values prints a payload with its keys in order.
func values(m map[string]*qdrant.Value) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s; ", k, m[k].String())
	}
	return b.String()
}

// Collections returns the names of the collections that exist.
func (s *Server) Collections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.collections {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// FieldIndex returns the payload index the collection (or alias) name
// has on field, or nil.
func (s *Server) FieldIndex(name, field string) *qdrant.CreateFieldIndexCollection {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, err := s.get(name); err == nil {
		return c.indexes[field]
	}
	return nil
}

// get resolves a collection name or alias; s.mu is held.
func (s *Server) get(name string) (*collection, error) {
	if target, ok := s.aliases[name]; ok {
		name = target
	}
	c := s.collections[name]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

func (s qdrantAPI) HealthCheck(ctx context.Context, req *qdrant.HealthCheckRequest) (*qdrant.HealthCheckReply, error) {
	return &qdrant.HealthCheckReply{Title: "qdrant - vector search engine (fake)", Version: "1.16.0"}, nil
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
	name := req.GetCollectionName()
	if _, ok := s.collections[name]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Wrong input: Collection `%s` already exists!", name)
	}
	if _, ok := s.aliases[name]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Wrong input: Alias `%s` already exists!", name)
	}
	c := &collection{dense: map[string]uint64{}, sparse: map[string]qdrant.Modifier{}, metadata: req.GetMetadata(),
		points: map[string]*point{}, indexes: map[string]*qdrant.CreateFieldIndexCollection{}}
	if req.GetVectorsConfig().GetParams() != nil {
		return nil, status.Error(codes.InvalidArgument, "this fake supports named vectors only")
	}
	for vname, p := range req.GetVectorsConfig().GetParamsMap().GetMap() {
		if p.GetSize() == 0 || p.GetDistance() != qdrant.Distance_Cosine {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: vector %q: this fake supports cosine vectors of a set size", vname)
		}
		c.dense[vname] = p.GetSize()
	}
	for vname, p := range req.GetSparseVectorsConfig().GetMap() {
		c.sparse[vname] = p.GetModifier()
	}
	if len(c.dense)+len(c.sparse) == 0 {
		return nil, status.Error(codes.InvalidArgument, "Wrong input: a collection needs a vector")
	}
	s.collections[name] = c
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
	dense := map[string]*qdrant.VectorParams{}
	for vname, size := range c.dense {
		dense[vname] = &qdrant.VectorParams{Size: size, Distance: qdrant.Distance_Cosine}
	}
	sparse := map[string]*qdrant.SparseVectorParams{}
	for vname, m := range c.sparse {
		sparse[vname] = &qdrant.SparseVectorParams{Modifier: m.Enum()}
	}
	schema := map[string]*qdrant.PayloadSchemaInfo{}
	for field, ix := range c.indexes {
		// The schema's types count from UnknownType, the index's from Keyword.
		schema[field] = &qdrant.PayloadSchemaInfo{DataType: qdrant.PayloadSchemaType(ix.GetFieldType() + 1)}
	}
	return &qdrant.GetCollectionInfoResponse{Result: &qdrant.CollectionInfo{
		Status:        qdrant.CollectionStatus_Green,
		PointsCount:   &n,
		PayloadSchema: schema,
		Config: &qdrant.CollectionConfig{
			Params:   &qdrant.CollectionParams{VectorsConfig: qdrant.NewVectorsConfigMap(dense), SparseVectorsConfig: qdrant.NewSparseVectorsConfig(sparse)},
			Metadata: c.metadata,
		},
	}}, nil
}

// Delete answers false for a collection that does not exist, as Qdrant does.
func (s collectionsAPI) Delete(ctx context.Context, req *qdrant.DeleteCollection) (*qdrant.CollectionOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := req.GetCollectionName()
	_, ok := s.collections[name]
	delete(s.collections, name)
	for a, target := range s.aliases {
		if target == name {
			delete(s.aliases, a)
		}
	}
	return &qdrant.CollectionOperationResponse{Result: ok}, nil
}

// UpdateAliases applies every action or none.
func (s collectionsAPI) UpdateAliases(ctx context.Context, req *qdrant.ChangeAliases) (*qdrant.CollectionOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[string]string{}
	for a, target := range s.aliases {
		next[a] = target
	}
	for _, op := range req.GetActions() {
		switch {
		case op.GetCreateAlias() != nil:
			a, target := op.GetCreateAlias().GetAliasName(), op.GetCreateAlias().GetCollectionName()
			if s.collections[target] == nil {
				return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", target)
			}
			if s.collections[a] != nil {
				return nil, status.Errorf(codes.AlreadyExists, "Wrong input: Collection `%s` already exists!", a)
			}
			next[a] = target
		case op.GetDeleteAlias() != nil:
			a := op.GetDeleteAlias().GetAliasName()
			if _, ok := next[a]; !ok {
				return nil, status.Errorf(codes.NotFound, "Not found: Alias `%s` doesn't exist!", a)
			}
			delete(next, a)
		case op.GetRenameAlias() != nil:
			from, to := op.GetRenameAlias().GetOldAliasName(), op.GetRenameAlias().GetNewAliasName()
			target, ok := next[from]
			if !ok {
				return nil, status.Errorf(codes.NotFound, "Not found: Alias `%s` doesn't exist!", from)
			}
			delete(next, from)
			next[to] = target
		default:
			return nil, status.Error(codes.InvalidArgument, "unknown alias action")
		}
	}
	s.aliases = next
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (s collectionsAPI) ListAliases(ctx context.Context, req *qdrant.ListAliasesRequest) (*qdrant.ListAliasesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*qdrant.AliasDescription
	for a, target := range s.aliases {
		out = append(out, &qdrant.AliasDescription{AliasName: a, CollectionName: target})
	}
	return &qdrant.ListAliasesResponse{Aliases: out}, nil
}

func (s pointsAPI) CreateFieldIndex(ctx context.Context, req *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	c.indexes[req.GetFieldName()] = req
	return completed(), nil
}

func completed() *qdrant.PointsOperationResponse {
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}
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
	// Check every point before writing any: a refused request changes nothing.
	points := make([]*point, 0, len(req.GetPoints()))
	for _, ps := range req.GetPoints() {
		if ps.GetVectors().GetVector() != nil {
			return nil, status.Error(codes.InvalidArgument, "Wrong input: Not existing vector name error: ")
		}
		p := &point{id: ps.GetId(), dense: map[string][]float32{}, sparse: map[string]map[uint32]float32{}, payload: ps.GetPayload()}
		for vname, v := range ps.GetVectors().GetVectors().GetVectors() {
			if size, ok := c.dense[vname]; ok {
				data := v.GetDense().GetData()
				if uint64(len(data)) != size {
					return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", size, len(data))
				}
				p.dense[vname] = slices.Clone(data)
				continue
			}
			if _, ok := c.sparse[vname]; !ok {
				return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Not existing vector name error: %s", vname)
			}
			sv, err := sparseOf(v.GetSparse())
			if err != nil {
				return nil, err
			}
			p.sparse[vname] = sv
		}
		points = append(points, p)
	}
	for _, p := range points {
		c.points[idOf(p.id)] = p
	}
	return completed(), nil
}

func sparseOf(v *qdrant.SparseVector) (map[uint32]float32, error) {
	if v == nil || len(v.GetIndices()) != len(v.GetValues()) {
		return nil, status.Error(codes.InvalidArgument, "Validation error in body: sparse vector: indices and values must be the same length")
	}
	out := make(map[uint32]float32, len(v.GetIndices()))
	for i, ix := range v.GetIndices() {
		if _, dup := out[ix]; dup {
			return nil, status.Error(codes.InvalidArgument, "Validation error in body: sparse vector: indices must be unique")
		}
		out[ix] = v.GetValues()[i]
	}
	return out, nil
}

// unindexed refuses a filter on a payload field with no index, as Qdrant
// does in strict mode (on by default in Qdrant Cloud).
func (c *collection) unindexed(filters ...*qdrant.Filter) error {
	for _, f := range filters {
		for _, cond := range f.GetMust() {
			if key := cond.GetField().GetKey(); key != "" && c.indexes[key] == nil {
				return status.Errorf(codes.InvalidArgument, "Bad request: Index required but not found for \"%s\". Help: Create an index for this key or use a different filter.", key)
			}
		}
	}
	return nil
}

// matches applies a filter's "must" conditions: keyword, integer,
// datetime range and has-ID, the kinds Hector sends. Any other kind
// matches nothing.
func matches(f *qdrant.Filter, p *point) bool {
	if len(f.GetShould()) > 0 || len(f.GetMustNot()) > 0 || len(f.GetMinShould().GetConditions()) > 0 {
		return false
	}
	for _, cond := range f.GetMust() {
		if h := cond.GetHasId(); h != nil {
			if !slices.ContainsFunc(h.GetHasId(), func(id *qdrant.PointId) bool { return idOf(id) == idOf(p.id) }) {
				return false
			}
			continue
		}
		fc := cond.GetField()
		if fc == nil {
			return false
		}
		v := p.payload[fc.GetKey()]
		if r := fc.GetDatetimeRange(); r != nil {
			if !inRange(v.GetStringValue(), r) {
				return false
			}
			continue
		}
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

// inRange compares at microseconds, as Qdrant keeps datetimes; a value
// that is no RFC 3339 datetime is out of every range.
func inRange(value string, r *qdrant.DatetimeRange) bool {
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return false
	}
	at := t.UnixMicro()
	micros := func(ts *timestamppb.Timestamp) int64 { return ts.AsTime().UnixMicro() }
	return (r.Gt == nil || at > micros(r.Gt)) && (r.Gte == nil || at >= micros(r.Gte)) &&
		(r.Lt == nil || at < micros(r.Lt)) && (r.Lte == nil || at <= micros(r.Lte))
}

func filterKeys(f *qdrant.Filter) []string {
	var keys []string
	for _, cond := range f.GetMust() {
		if cond.GetHasId() != nil {
			keys = append(keys, "has_id")
		} else {
			keys = append(keys, cond.GetField().GetKey())
		}
	}
	return keys
}

func (s *Server) record(method string, filters ...*qdrant.Filter) {
	r := Request{Method: method}
	for _, f := range filters {
		r.Filters = append(r.Filters, filterKeys(f))
	}
	s.requests = append(s.requests, r)
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
	s.record("Delete", f)
	if err := c.unindexed(f); err != nil {
		return nil, err
	}
	for id, p := range c.points {
		if matches(f, p) {
			delete(c.points, id)
		}
	}
	return completed(), nil
}

// byID is the order Qdrant scrolls in and breaks ties by.
func byID(a, b *qdrant.PointId) int { return cmp.Compare(idOf(a), idOf(b)) }

func (s pointsAPI) Scroll(ctx context.Context, req *qdrant.ScrollPoints) (*qdrant.ScrollResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	s.record("Scroll", req.GetFilter())
	if err := c.unindexed(req.GetFilter()); err != nil {
		return nil, err
	}
	var found []*point
	for _, p := range c.points {
		if matches(req.GetFilter(), p) && (req.GetOffset() == nil || byID(p.id, req.GetOffset()) >= 0) {
			found = append(found, p)
		}
	}
	slices.SortFunc(found, func(a, b *point) int { return byID(a.id, b.id) })
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = 10
	}
	resp := &qdrant.ScrollResponse{}
	if len(found) > limit {
		resp.NextPageOffset = found[limit].id
		found = found[:limit]
	}
	for _, p := range found {
		resp.Result = append(resp.Result, &qdrant.RetrievedPoint{Id: p.id, Payload: selectPayload(req.GetWithPayload(), p.payload)})
	}
	return resp, nil
}

func selectPayload(sel *qdrant.WithPayloadSelector, payload map[string]*qdrant.Value) map[string]*qdrant.Value {
	if include := sel.GetInclude().GetFields(); len(include) > 0 {
		out := map[string]*qdrant.Value{}
		for _, k := range include {
			if v, ok := payload[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	if sel.GetEnable() {
		return payload
	}
	return nil
}

func (s pointsAPI) Query(ctx context.Context, req *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	filters := []*qdrant.Filter{req.GetFilter()}
	for _, pf := range req.GetPrefetch() {
		filters = append(filters, pf.GetFilter())
	}
	s.record("Query", filters...)
	if err := c.unindexed(filters...); err != nil {
		return nil, err
	}
	limit := req.GetLimit()
	if limit == 0 {
		limit = 10
	}
	var hits []*qdrant.ScoredPoint
	if len(req.GetPrefetch()) > 0 {
		if req.GetQuery().GetRrf() == nil && req.GetQuery().GetFusion() != qdrant.Fusion_RRF {
			return nil, status.Error(codes.InvalidArgument, "this fake fuses prefetches by RRF only")
		}
		var lists [][]*qdrant.ScoredPoint
		for _, pf := range req.GetPrefetch() {
			// The main query's filter applies to its prefetches too.
			list, err := c.nearest(pf.GetQuery(), pf.GetUsing(), req.GetFilter(), pf.GetFilter(), pf.GetScoreThreshold(), pf.GetLimit())
			if err != nil {
				return nil, err
			}
			lists = append(lists, list)
		}
		hits = rrf(lists, req.GetQuery().GetRrf(), limit)
	} else if hits, err = c.nearest(req.GetQuery(), req.GetUsing(), req.GetFilter(), nil, req.GetScoreThreshold(), limit); err != nil {
		return nil, err
	}
	for _, h := range hits {
		h.Payload = selectPayload(req.GetWithPayload(), c.points[idOf(h.Id)].payload)
	}
	return &qdrant.QueryResponse{Result: hits}, nil
}

// rrf fuses ranked lists as Qdrant does: 1/(k + position), positions from
// 0, k 2 unless the request says otherwise; ties go to the lower ID.
func rrf(lists [][]*qdrant.ScoredPoint, params *qdrant.Rrf, limit uint64) []*qdrant.ScoredPoint {
	k := uint32(2)
	if params.K != nil {
		k = params.GetK()
	}
	fused := map[string]*qdrant.ScoredPoint{}
	for _, list := range lists {
		for pos, h := range list {
			f := fused[idOf(h.Id)]
			if f == nil {
				f = &qdrant.ScoredPoint{Id: h.Id}
				fused[idOf(h.Id)] = f
			}
			f.Score += 1 / float32(uint32(pos)+k)
		}
	}
	out := make([]*qdrant.ScoredPoint, 0, len(fused))
	for _, f := range fused {
		out = append(out, f)
	}
	return best(out, limit)
}

func best(hits []*qdrant.ScoredPoint, limit uint64) []*qdrant.ScoredPoint {
	slices.SortFunc(hits, func(a, b *qdrant.ScoredPoint) int { return cmp.Or(cmp.Compare(b.Score, a.Score), byID(a.Id, b.Id)) })
	return hits[:min(int(limit), len(hits))]
}

// nearest scores the points that pass both filters against a dense or
// sparse query on the named vector. A sparse query finds only points
// sharing one of its indices.
func (c *collection) nearest(q *qdrant.Query, using string, f1, f2 *qdrant.Filter, threshold float32, limit uint64) ([]*qdrant.ScoredPoint, error) {
	in := q.GetNearest()
	if in == nil {
		return nil, status.Error(codes.InvalidArgument, "this fake answers nearest queries only")
	}
	if limit == 0 {
		limit = 10
	}
	var score func(p *point) (float32, bool)
	if size, ok := c.dense[using]; ok {
		qv := in.GetDense().GetData()
		if uint64(len(qv)) != size {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", size, len(qv))
		}
		score = func(p *point) (float32, bool) {
			v, ok := p.dense[using]
			return cosine(qv, v), ok
		}
	} else if modifier, ok := c.sparse[using]; ok {
		qv, err := sparseOf(in.GetSparse())
		if err != nil {
			return nil, err
		}
		weights := qv
		if modifier == qdrant.Modifier_Idf {
			weights = c.idf(using, qv)
		}
		score = func(p *point) (float32, bool) {
			var sum float32
			shared := false
			for ix, w := range weights {
				if dv, ok := p.sparse[using][ix]; ok {
					sum += w * dv
					shared = true
				}
			}
			return sum, shared
		}
	} else {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Not existing vector name error: %s", using)
	}
	var hits []*qdrant.ScoredPoint
	for _, p := range c.points {
		if !matches(f1, p) || !matches(f2, p) {
			continue
		}
		if sc, ok := score(p); ok && sc >= threshold {
			hits = append(hits, &qdrant.ScoredPoint{Id: p.id, Score: sc})
		}
	}
	return best(hits, limit), nil
}

// idf weighs each query index by ln(1 + (N - n + 0.5)/(n + 0.5)), N the
// points with the sparse vector, n those with the index.
func (c *collection) idf(using string, q map[uint32]float32) map[uint32]float32 {
	n := 0
	df := map[uint32]int{}
	for _, p := range c.points {
		sv, ok := p.sparse[using]
		if !ok {
			continue
		}
		n++
		for ix := range q {
			if _, ok := sv[ix]; ok {
				df[ix]++
			}
		}
	}
	out := make(map[uint32]float32, len(q))
	for ix, w := range q {
		idf := math.Log(1 + (float64(n-df[ix])+0.5)/(float64(df[ix])+0.5))
		out[ix] = w * float32(idf)
	}
	return out
}

func cosine(a, b []float32) float32 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(na*nb))
}
