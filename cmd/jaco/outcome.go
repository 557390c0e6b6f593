package main

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/reason"
)

// checkWith is a write answered outcome_unknown, with the command that
// shows whether it was applied. describe adds it to the advice.
type checkWith struct {
	error
	command string
}

func (c checkWith) Unwrap() error { return c.error }

// mayHaveApplied names the command that shows whether a write answered
// outcome_unknown was applied (jaco service inspect NAME); other errors
// pass unchanged. A write the client gave up on at --timeout is
// outcome_unknown too: the request may have reached the leader and
// committed after the client stopped waiting.
func mayHaveApplied(err error, command string) error {
	if st, ok := status.FromError(err); ok && st.Code() == codes.DeadlineExceeded && reason.Of(err) == "" {
		err = reason.Error(codes.DeadlineExceeded, reason.OutcomeUnknown, "no answer from jacod within --timeout (%s)", st.Message())
	}
	if reason.Of(err) != reason.OutcomeUnknown {
		return err
	}
	return checkWith{error: err, command: command}
}

// outcomeAdvice is what describe appends to an outcome_unknown error: the
// write may have been applied, so the operator looks before retrying (a
// blind retry of a versioned update that was applied answers
// version_conflict for a change that was made). command shows the object,
// when the failing command named one.
func outcomeAdvice(command string) string {
	check := "read it back"
	if command != "" {
		check = "check with `" + command + "`"
	}
	return "the change may have been applied; " + check + " before retrying"
}
