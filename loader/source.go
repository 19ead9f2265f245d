package loader

// Source is an indexed sequence of training samples of SeqLen()+1 token ids:
// Samples (one split of one dataset) and Blend (several, mixed by weight) implement
// it, and a Sampler draws from one. Its methods may be called from several
// goroutines at once.
type Source interface {
	// Len is the number of samples.
	Len() int64
	// SeqLen is L; every sample has L+1 token ids.
	SeqLen() int
	// Sample appends sample i's L+1 token ids to dst and returns it; i is in
	// [0, Len()).
	Sample(i int64, dst []int) []int
	// SampleInt32 appends sample i's L+1 token ids to dst as int32 (what kernels
	// take) and returns it. The ids are converted straight from the shards'
	// mapping, so filling a preallocated batch allocates nothing.
	SampleInt32(i int64, dst []int32) []int32
}
