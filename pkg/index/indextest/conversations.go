package indextest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// The conversation set: long multi-session conversations between two
// named people, one memory (app, user) per pair, each person with facts
// said once in passing among small talk and distractors that share their
// words, and questions about them in five categories. It is generated from
// a seed, so every run and every index sees the same set.
//
//   - single-hop: one turn answers, and the question shares its words;
//   - multi-hop: two turns answer together (a pet's name, then what was
//     bought for it);
//   - temporal: when something happened or will;
//   - paraphrase: no content word in common with the answering turn;
//   - open-domain: what someone would like or do, from what they said.
const (
	Pairs            = 20
	sessionsPerPair  = 8
	fillerPerSession = 16
)

// Categories of questions, in the order reports list them.
var Categories = []string{"single-hop", "multi-hop", "temporal", "paraphrase", "open-domain"}

// Metrics are retrieval figures over a set of questions, each in 0..1:
// the evidence first (Hit1), the share of evidence turns in the top 5 and
// 10, the mean reciprocal rank of the first one and NDCG at 5.
type Metrics struct {
	Questions                    int
	Hit1, Recall5, Recall10, MRR float64
	NDCG5                        float64
}

func (m Metrics) String() string {
	return fmt.Sprintf("n=%3d  hit@1 %.3f  recall@5 %.3f  recall@10 %.3f  MRR %.3f  NDCG@5 %.3f", m.Questions, m.Hit1, m.Recall5, m.Recall10, m.MRR, m.NDCG5)
}

// Report is an index's figures on the conversation set, overall and per category.
type Report struct {
	All        Metrics
	ByCategory map[string]Metrics
}

// ConversationSet is the generated set.
type ConversationSet struct {
	Owners    []ConversationOwner
	Questions []Question
}

// ConversationOwner is one pair's memory: their sessions, turn by turn.
type ConversationOwner struct {
	UserID   string
	Sessions [][]Turn
	start    time.Time
}

// Turn is one message.
type Turn struct {
	Author, Text string
	Key          string // "" for small talk; the fact it states otherwise
}

// Question asks one owner's memory; Evidence are the keys of the turns
// that answer it.
type Question struct {
	UserID, Category, Text string
	Evidence               []string
}

// Subset is the set's first n pairs and their questions: the same
// conversations, for a comparison that need not pay for all of them.
func (s *ConversationSet) Subset(n int) *ConversationSet {
	out := &ConversationSet{Owners: s.Owners[:min(n, len(s.Owners))]}
	kept := map[string]bool{}
	for _, o := range out.Owners {
		kept[o.UserID] = true
	}
	for _, q := range s.Questions {
		if kept[q.UserID] {
			out.Questions = append(out.Questions, q)
		}
	}
	return out
}

// Turns counts the set's turns.
func (s *ConversationSet) Turns() int {
	n := 0
	for _, o := range s.Owners {
		for _, sess := range o.Sessions {
			n += len(sess)
		}
	}
	return n
}

// Conversations generates the set.
func Conversations() *ConversationSet {
	r := rand.New(rand.NewPCG(2026, 29))
	set := &ConversationSet{}
	names := slices.Clone(firstNames)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for p := range Pairs {
		people := [2]person{{names[2*p], pronouns[r.IntN(2)]}, {names[2*p+1], pronouns[r.IntN(2)]}}
		owner := ConversationOwner{UserID: fmt.Sprintf("pair%02d", p), start: time.Date(2025, time.Month(1+p%12), 1+p, 9, 0, 0, 0, time.UTC)}
		owner.Sessions = make([][]Turn, sessionsPerPair)
		for si := range owner.Sessions {
			for range fillerPerSession {
				speaker := people[r.IntN(2)]
				line := smallTalk[r.IntN(len(smallTalk))]
				if r.IntN(3) == 0 {
					line = distractors[r.IntN(len(distractors))]
				}
				owner.Sessions[si] = append(owner.Sessions[si], Turn{Author: speaker.name, Text: line})
			}
		}
		for _, who := range people {
			facts := slices.Clone(factKinds)
			r.Shuffle(len(facts), func(i, j int) { facts[i], facts[j] = facts[j], facts[i] })
			for fi, fact := range facts[:7] {
				key := fmt.Sprintf("%s/%s/%d", owner.UserID, who.name, fi)
				turns, questions := fact(r, who, key)
				// Each fact's turns go in order into sessions, each at a
				// random place, answered by the other person.
				other := people[0]
				if other.name == who.name {
					other = people[1]
				}
				si := r.IntN(sessionsPerPair - len(turns) + 1)
				for k, text := range turns {
					sess := owner.Sessions[si+k]
					at := r.IntN(len(sess) + 1)
					evidence := Turn{Author: who.name, Text: text, Key: fmt.Sprintf("%s#%d", key, k)}
					reply := Turn{Author: other.name, Text: replies[r.IntN(len(replies))]}
					owner.Sessions[si+k] = slices.Insert(sess, at, evidence, reply)
				}
				for _, q := range questions {
					q.UserID = owner.UserID
					set.Questions = append(set.Questions, q)
				}
			}
		}
		set.Owners = append(set.Owners, owner)
	}
	return set
}

// MeasureConversations stores the set in a session service, rebuilds idx
// from it, and measures idx with every question.
func MeasureConversations(t testing.TB, idx index.Service, set *ConversationSet) Report {
	t.Helper()
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	keyOf := map[string]string{} // event ID -> evidence key
	for _, o := range set.Owners {
		at := o.start
		for si, turns := range o.Sessions {
			resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "conv", UserID: o.UserID, SessionID: fmt.Sprintf("s%d", si)})
			if err != nil {
				t.Fatal(err)
			}
			at = at.Add(9 * 24 * time.Hour)
			events := make([]*session.Event, len(turns))
			for i, turn := range turns {
				events[i] = &session.Event{Author: turn.Author, Timestamp: at.Add(time.Duration(i) * time.Minute),
					Message: session.NewTextMessage(session.RoleUser, turn.Text)}
			}
			if err := sessions.AppendEvents(ctx, resp.Session, events); err != nil {
				t.Fatal(err)
			}
			for i, turn := range turns {
				if turn.Key != "" {
					keyOf[events[i].ID] = turn.Key
				}
			}
		}
	}
	if err := idx.Rebuild(ctx, sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	sums := map[string]*Metrics{"": {}}
	for _, c := range Categories {
		sums[c] = &Metrics{}
	}
	for _, q := range set.Questions {
		resp, err := idx.Search(ctx, &index.SearchRequest{Query: q.Text, AppName: "conv", UserID: q.UserID, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ranked []string
		for _, r := range resp.Results {
			ranked = append(ranked, keyOf[r.EventID])
		}
		m := score(ranked, q.Evidence)
		for _, s := range []*Metrics{sums[""], sums[q.Category]} {
			s.Questions++
			s.Hit1 += m.Hit1
			s.Recall5 += m.Recall5
			s.Recall10 += m.Recall10
			s.MRR += m.MRR
			s.NDCG5 += m.NDCG5
		}
	}
	rep := Report{ByCategory: map[string]Metrics{}}
	for c, s := range sums {
		if n := float64(s.Questions); n > 0 {
			s.Hit1, s.Recall5, s.Recall10, s.MRR, s.NDCG5 = s.Hit1/n, s.Recall5/n, s.Recall10/n, s.MRR/n, s.NDCG5/n
		}
		if c == "" {
			rep.All = *s
		} else {
			rep.ByCategory[c] = *s
		}
	}
	return rep
}

// score measures one question's ranking against its evidence.
func score(ranked, evidence []string) Metrics {
	var m Metrics
	found5, found10 := 0, 0
	var dcg, ideal float64
	for i, key := range ranked {
		if !slices.Contains(evidence, key) {
			continue
		}
		if m.MRR == 0 {
			m.MRR = 1 / float64(i+1)
		}
		if i == 0 {
			m.Hit1 = 1
		}
		if i < 5 {
			found5++
			dcg += 1 / math.Log2(float64(i+2))
		}
		if i < 10 {
			found10++
		}
	}
	for i := range min(5, len(evidence)) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	m.Recall5, m.Recall10 = float64(found5)/float64(len(evidence)), float64(found10)/float64(len(evidence))
	m.NDCG5 = dcg / ideal
	return m
}

type person struct {
	name string
	pro  pronoun
}

type pronoun struct{ subject, object, possessive string }

var pronouns = []pronoun{{"she", "her", "her"}, {"he", "him", "his"}}

// A fact kind makes one fact of a person: the turns that state it (more
// than one for multi-hop questions, in the order said) and its questions,
// whose evidence names the turns by key#index.
type factKind func(r *rand.Rand, p person, key string) ([]string, []Question)

func pick(r *rand.Rand, options ...string) string { return options[r.IntN(len(options))] }

func ev(key string, turns ...int) []string {
	out := make([]string, len(turns))
	for i, t := range turns {
		out[i] = fmt.Sprintf("%s#%d", key, t)
	}
	return out
}

var factKinds = []factKind{
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a pet, and a present for it
		young := pick(r, "puppy", "kitten", "bunny")
		pet := pick(r, "Biscuit", "Pepper", "Mochi", "Ziggy", "Waffles", "Juniper", "Noodle", "Olive")
		item := pick(r, "squeaky toy", "cosy bed", "scratching post", "red collar", "chew bone")
		turns := []string{
			fmt.Sprintf("We finally adopted a %s from the shelter last weekend, we're calling it %s.", young, pet),
			fmt.Sprintf("I bought %s a %s yesterday and it hasn't left it since.", pet, item),
		}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("What did %s name the %s from the shelter?", p.name, young), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("Does %s have any animals at home?", p.name), Evidence: ev(key, 0)},
			{Category: "temporal", Text: fmt.Sprintf("When did %s adopt %s?", p.name, pet), Evidence: ev(key, 0)},
			{Category: "multi-hop", Text: fmt.Sprintf("What present did %s get for %s %s?", p.name, p.pro.possessive, young), Evidence: ev(key, 0, 1)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a new job
		job := pick(r, "nurse", "teacher", "architect", "accountant", "chef", "electrician", "pharmacist")
		place := pick(r, "St Mary's", "the Riverside clinic", "Greenfield Academy", "the harbour office", "Bellwood")
		turns := []string{fmt.Sprintf("I got the offer! I'm starting as a %s at %s next month.", job, place)}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("Where will %s start as a %s?", p.name, job), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("What does %s do for a living?", p.name), Evidence: ev(key, 0)},
			{Category: "temporal", Text: fmt.Sprintf("When does %s begin the new position?", p.name), Evidence: ev(key, 0)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a trip
		city := pick(r, "Lisbon", "Kyoto", "Reykjavik", "Marrakesh", "Vancouver", "Krakow", "Cape Town")
		month := pick(r, "March", "June", "September", "October")
		act := pick(r, "eat my way through the markets", "hike every day", "see the old town", "try surfing")
		turns := []string{fmt.Sprintf("Just booked flights to %s for the first week of %s, I can't wait to %s.", city, month, act)}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("Which city did %s book flights to?", p.name), Evidence: ev(key, 0)},
			{Category: "temporal", Text: fmt.Sprintf("When is %s going to %s?", p.name, city), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("Does %s have holiday plans abroad?", p.name), Evidence: ev(key, 0)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a hobby
		hobby := pick(r, "pottery", "rock climbing", "watercolour painting", "cello", "salsa dancing", "sourdough baking")
		turns := []string{fmt.Sprintf("I signed up for a %s course on Thursday evenings, it's been so relaxing.", hobby)}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("What course did %s sign up for?", p.name), Evidence: ev(key, 0)},
			{Category: "open-domain", Text: fmt.Sprintf("How might %s unwind after a stressful week?", p.name), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("Which new pastime has %s taken up?", p.name), Evidence: ev(key, 0)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a relative, and news of them
		rel := pick(r, "sister", "brother", "cousin")
		name := pick(r, "Anna", "Tomas", "Priya", "Leo", "Grace", "Mateo")
		city := pick(r, "Toronto", "Dublin", "Melbourne", "Oslo", "Austin")
		role := pick(r, "head of engineering", "senior editor", "lead surgeon", "store manager")
		turns := []string{
			fmt.Sprintf("My %s %s lives in %s, I miss the long chats we used to have.", rel, name, city),
			fmt.Sprintf("%s just got promoted to %s, we're all so proud.", name, role),
		}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("Where does %s's %s live?", p.name, rel), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("Which relatives does %s have?", p.name), Evidence: ev(key, 0)},
			{Category: "multi-hop", Text: fmt.Sprintf("What promotion did %s's %s get?", p.name, rel), Evidence: ev(key, 0, 1)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // an allergy
		allergen := pick(r, "peanuts", "shellfish", "sesame", "kiwi fruit")
		turns := []string{fmt.Sprintf("I have to be careful at restaurants, I'm allergic to %s.", allergen)}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("What is %s allergic to?", p.name), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("Are there foods %s must avoid?", p.name), Evidence: ev(key, 0)},
			{Category: "open-domain", Text: fmt.Sprintf("What should I keep in mind when cooking dinner for %s?", p.name), Evidence: ev(key, 0)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a move
		area := pick(r, "Riverside", "Old Town", "Northgate", "Hillcrest", "the harbour district")
		day := 2 + r.IntN(26)
		turns := []string{fmt.Sprintf("We're moving into the new flat in %s on the %dth, boxes everywhere.", area, day)}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("Which neighbourhood is %s moving to?", p.name), Evidence: ev(key, 0)},
			{Category: "temporal", Text: fmt.Sprintf("When is %s moving?", p.name), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("Is %s changing address soon?", p.name), Evidence: ev(key, 0)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a car
		brand := pick(r, "Volvo", "Honda", "Peugeot", "Subaru", "Fiat")
		turns := []string{fmt.Sprintf("I finally sold my old %s and bought an electric one, charging is so cheap.", brand)}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("What did %s do with the old %s?", p.name, brand), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("What kind of vehicle does %s drive now?", p.name), Evidence: ev(key, 0)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a diet
		month := pick(r, "January", "April", "July", "November")
		turns := []string{fmt.Sprintf("I've been fully vegetarian since %s, no more meat for me.", month)}
		return turns, []Question{
			{Category: "temporal", Text: fmt.Sprintf("Since when has %s been vegetarian?", p.name), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("Does %s still eat steak or chicken?", p.name), Evidence: ev(key, 0)},
			{Category: "open-domain", Text: fmt.Sprintf("What should I order for %s at a barbecue?", p.name), Evidence: ev(key, 0)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a race
		minutes := 95 + r.IntN(40)
		turns := []string{fmt.Sprintf("Ran my first half marathon on Sunday in %d minutes, my legs are done.", minutes)}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("How long did %s take to run the half marathon?", p.name), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("Has %s completed a long-distance race?", p.name), Evidence: ev(key, 0)},
			{Category: "open-domain", Text: fmt.Sprintf("Is %s into fitness?", p.name), Evidence: ev(key, 0)},
		}
	},
	func(r *rand.Rand, p person, key string) ([]string, []Question) { // a book
		book := pick(r, "The Overstory", "Piranesi", "Klara and the Sun", "The Remains of the Day", "Circe")
		turns := []string{fmt.Sprintf("I'm reading %s at the moment and I can't put it down.", book)}
		return turns, []Question{
			{Category: "single-hop", Text: fmt.Sprintf("Which book is %s reading?", p.name), Evidence: ev(key, 0)},
			{Category: "paraphrase", Text: fmt.Sprintf("What novel has %s been enjoying lately?", p.name), Evidence: ev(key, 0)},
			{Category: "open-domain", Text: fmt.Sprintf("What would make a good present for %s?", p.name), Evidence: ev(key, 0)},
		}
	},
}

var firstNames = []string{"Caroline", "Melanie", "Jonah", "Priyanka", "Marcus", "Ingrid", "Tobias", "Yasmin", "Felix", "Aisha",
	"Declan", "Sofia", "Ravi", "Hannah", "Oskar", "Lucia", "Kenji", "Amara", "Elliot", "Nadia", "Bruno", "Chloe", "Dmitri",
	"Esme", "Farid", "Greta", "Hugo", "Imani", "Jasper", "Keira", "Lorenzo", "Maya", "Nikolai", "Orla", "Pablo", "Quinn",
	"Rosa", "Stellan", "Tamsin", "Umar"}

var smallTalk = []string{
	"How was your week?", "Pretty busy, but good. Work has been hectic.", "Did you watch the game last night?",
	"The weather has been awful lately.", "I slept terribly, the neighbours were loud again.", "Any plans for the weekend?",
	"Not really, maybe just stay in and relax.", "I tried that new coffee place on the corner.", "It was fine, a bit pricey.",
	"I need to clean the flat at some point.", "Ha, same here. It's a mess.", "Have you seen the new series everyone talks about?",
	"I started it but fell asleep halfway.", "My phone battery keeps dying.", "You should get it checked.",
	"Traffic this morning was unbelievable.", "I finally finished that report.", "We should catch up properly soon.",
	"Let's do lunch next week.", "Sounds great, text me.", "I'm so tired today.", "Long day at the office.",
	"I made pasta again, it's all I can cook.", "It's getting colder in the evenings.", "I need a holiday, honestly.",
	"Did you hear the news about the bridge closure?", "Yes, it's going to be chaos.", "I've been meaning to call you.",
	"No worries, I've been busy too.", "What are you up to tonight?", "Just some chores and an early night.",
	"I bought new running shoes but haven't used them.", "The train was late again.", "Happy Friday!",
	"My plants are dying, I keep forgetting to water them.", "I cleaned out the garage on Saturday.",
	"The internet has been so slow this week.", "I'm thinking of repainting the kitchen.", "Green or blue?", "Definitely blue.",
}

// distractors share words with the facts without stating any.
var distractors = []string{
	"My neighbour's dog barked all night again.", "I saw a video of a kitten falling asleep, so cute.",
	"There's a new shelter opening near the station.", "My friend is a nurse and works crazy hours.",
	"Flights are so expensive this time of year.", "I read that Lisbon is crowded in summer.",
	"I watched a documentary about marathon runners.", "A colleague started a pottery course and loves it.",
	"The restaurant downtown changed its menu.", "Someone at work is moving to Dublin.",
	"Electric cars are everywhere now.", "The bookshop had a sale on novels.", "My cousin's wedding is in June.",
	"I walked past the climbing gym today.", "The office got a new coffee machine.", "Vegetarian options at the canteen are better now.",
	"The clinic on the corner is always busy.", "I keep seeing ads for cooking courses.", "My brother never calls.",
	"Someone left a bunny toy on the bus.",
}

var replies = []string{
	"That's amazing, congratulations!", "Oh wow, tell me more.", "I'm so happy for you.", "That sounds lovely.",
	"Oh no, that must be tough.", "Really? I had no idea.", "Good for you!", "That's huge news.", "Haha, love it.",
	"You'll have to show me sometime.",
}
