// Package protocol is how loadgen's parent and an implementation under test
// talk: the Spec the parent sends first (what to build and run), the
// Commands it sends after (the churn started and ended, the server's state
// to check against, finish), and the Messages the child answers with
// (timeline samples, synced, ready, caught up with its check, its result,
// soak samples, an error). A child process (started with ChildFlag) reads
// the Spec and the Commands on stdin and writes Messages on stdout, one
// JSON value a line (Encoder, NewDecoder); an implementation run on
// goroutines of the parent gets the same values over channels.
//
// The conversation of one trial, for the informer and controller scenarios:
//
//	parent → child   Spec
//	child  → parent  MsgSample…, MsgSynced, MsgReady
//	parent → child   CmdChurnStart, CmdChurnEnd (Emitted)
//	child  → parent  MsgWantState; parent → child CmdState (State, Final), as often as asked
//	child  → parent  MsgCaughtUp (Check)
//	parent → child   CmdFinish (Deletes)
//	child  → parent  MsgResult, then exits; the parent adds MsgExit
//
// A replica (report.ScenarioReplicas) answers CmdFinish with its
// ReplicaState and then its figures.
package protocol
