package api

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// podsResource names pods in Status details, as the API server does.
var podsResource = schema.GroupResource{Resource: "pods"}

// toStatus turns any error into the metav1.Status the API returns: the
// Status of an apimachinery StatusError as is, a 500 InternalError for
// anything else.
func toStatus(err error) metav1.Status {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		if st.Code == 0 {
			st.Code = http.StatusInternalServerError
		}
		if st.Status == "" {
			st.Status = metav1.StatusFailure
		}
		st.Kind, st.APIVersion = "Status", "v1"
		return st
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return toStatus(apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)))
	}
	return toStatus(apierrors.NewInternalError(err))
}

// methodNotAllowed is the Status of a method a route does not serve.
func methodNotAllowed(method, path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusMethodNotAllowed,
		Reason:  metav1.StatusReasonMethodNotAllowed,
		Message: fmt.Sprintf("the server does not allow method %s on %s", method, path),
	}}
}

// notFoundPath is the Status of a path no route serves.
func notFoundPath(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("the server could not find the requested resource %s", path),
	}}
}

// strictFieldRE pulls the field path out of sigs.k8s.io/json's strict
// errors: `unknown field "spec.foo"`, `duplicate field "metadata.name"`.
var strictFieldRE = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)

// strictDecodingError is the 400 BadRequest for a body with unknown or
// duplicated fields (resource: "pods", "configmaps", …). Like the API server with fieldValidation=Strict, the
// message names every field; the causes carry each path.
func strictDecodingError(resource, name string, errs []error) error {
	msg := "strict decoding error: "
	var causes []metav1.StatusCause
	for i, e := range errs {
		if i > 0 {
			msg += ", "
		}
		msg += e.Error()
		c := metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: e.Error()}
		if m := strictFieldRE.FindStringSubmatch(e.Error()); m != nil {
			c.Field = m[2]
			c.Message = m[1] + " field"
			if m[1] == "duplicate" {
				c.Type = metav1.CauseTypeFieldValueDuplicate
			}
		}
		causes = append(causes, c)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusBadRequest,
		Reason:  metav1.StatusReasonBadRequest,
		Message: msg,
		Details: &metav1.StatusDetails{Name: name, Kind: resource, Causes: causes},
	}}
}
