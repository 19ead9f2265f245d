package sim

// The decoded form of a kernel: one inst per PTX instruction, with register
// operands resolved to slot numbers of the warp's register file, constants and
// special registers turned into slots filled once per warp, branch targets
// resolved to instruction indices, and the operation chosen as a function for
// the exact opcode, types and modifiers (no text is looked at while running).

// execFn runs one instruction for the lanes in m (the active lanes whose guard
// predicate holds; never 0).
type execFn func(w *warp, in *inst, m uint32)

// ctl is how an instruction affects control flow.
type ctl uint8

const (
	ctlNone   ctl = iota // run fn, go on to the next instruction
	ctlBra               // branch to target for the guarded lanes
	ctlBraUni            // a branch the program says is uniform across the active lanes
	ctlExit              // the lanes finish (exit, or ret from the kernel)
	ctlBar               // bar.sync / barrier.sync: wait for the block
)

// inst is one decoded instruction.
type inst struct {
	fn     execFn
	ctl    ctl
	gneg   bool
	mode   rmode
	ftz    bool
	sat    bool
	size   uint8 // bytes accessed by a memory instruction (per element)
	nvec   uint8 // elements of a vector access
	guard  int32 // predicate index of @p; -1 when unguarded
	d      int32 // destination slot (or predicate index)
	a      int32 // source slots
	b      int32
	c      int32
	e      int32
	target int32 // branch target (instruction index)
	line   int32 // PTX source line
	imm    int64 // address offset, and per-op constants
	imm2   int64
	vd     []int32 // vector destination slots (ld.v4, mma D, ldmatrix)
	va     []int32 // vector source slots (st.v4, mma A, B, C)
	op     string  // the opcode as written, for messages
	space  space   // state space of a memory instruction
	aux    any     // per-op extra data
}

// space is a PTX state space.
type space uint8

const (
	spGeneric space = iota
	spGlobal
	spShared
	spLocal
	spParam
	spConst
)

var spaceNames = [...]string{"generic", "global", "shared", "local", "param", "const"}

func (s space) String() string { return spaceNames[s] }

// special is a special register a slot is filled from.
type special uint8

const (
	srTidX special = iota
	srTidY
	srTidZ
	srNtidX
	srNtidY
	srNtidZ
	srCtaidX
	srCtaidY
	srCtaidZ
	srNctaidX
	srNctaidY
	srNctaidZ
	srLaneid
	srWarpid
	srNwarpid
	srSmid
	srNsmid
	srGridid
	srLanemaskEq
	srLanemaskLt
	srLanemaskLe
	srLanemaskGt
	srLanemaskGe
	srClock
	srClock64
	srGlobaltimer
	srDynSmem
	srTotalSmem
)

var specialNames = map[string]special{
	"%tid.x": srTidX, "%tid.y": srTidY, "%tid.z": srTidZ,
	"%ntid.x": srNtidX, "%ntid.y": srNtidY, "%ntid.z": srNtidZ,
	"%ctaid.x": srCtaidX, "%ctaid.y": srCtaidY, "%ctaid.z": srCtaidZ,
	"%nctaid.x": srNctaidX, "%nctaid.y": srNctaidY, "%nctaid.z": srNctaidZ,
	"%laneid": srLaneid, "%warpid": srWarpid, "%nwarpid": srNwarpid, "%smid": srSmid, "%nsmid": srNsmid,
	"%gridid": srGridid, "%lanemask_eq": srLanemaskEq, "%lanemask_lt": srLanemaskLt, "%lanemask_le": srLanemaskLe,
	"%lanemask_gt": srLanemaskGt, "%lanemask_ge": srLanemaskGe, "%clock": srClock, "%clock64": srClock64,
	"%globaltimer": srGlobaltimer, "%dynamic_smem_size": srDynSmem, "%total_smem_size": srTotalSmem,
}

// slotInit fills a slot when a warp starts: a constant or a special register.
type slotInit struct {
	slot int32
	val  uint64
	sr   special
	isSR bool
}

// param is a kernel parameter's place in the parameter buffer.
type param struct {
	name   string
	offset int
	size   int
}

// program is a decoded kernel.
type program struct {
	name       string // kernel name
	module     string // module (file) name
	code       []inst
	nslots     int
	npreds     int
	inits      []slotInit // constants and special registers
	params     []param
	paramSize  int
	shared     int // static shared bytes (module and kernel .shared variables)
	sharedAl   int // alignment of the dynamic shared area's start
	localSize  int // bytes of .local per thread
	usesAtomic bool
	usesAsync  bool // cp.async: the per-thread copy queues need resetting
	maxThreads int  // .maxntid/.reqntid product, 0 when not given
	reqNTID    []int
}
