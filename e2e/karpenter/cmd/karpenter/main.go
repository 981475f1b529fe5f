// Karpenter with its kwok cloud provider, as sigs.k8s.io/karpenter kwok/main.go @v1.14.1 builds it, plus the one
// line the AWS provider adds that the box needs: the label of a reserved offering's capacity reservation
// (aws/karpenter-provider-aws pkg/apis/v1/doc.go @v1.14.1 sets cloudprovider.ReservationIDLabel to it). Without
// it the kwok build leaves the label empty and a NodeClaim for reserved capacity carries a requirement with an
// empty key, which the API server refuses.
package main

import (
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
)

// LabelCapacityReservationID of aws/karpenter-provider-aws pkg/apis/v1/labels.go @v1.14.1 (apis.Group + "/capacity-reservation-id").
const reservationIDLabel = "karpenter.k8s.aws/capacity-reservation-id"

func main() {
	cloudprovider.ReservationIDLabel = reservationIDLabel
	ctx, op := operator.NewOperator()
	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed constructing instance types")
	}
	undecorated := kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes)
	cloudProvider := overlay.Decorate(undecorated, op.GetClient(), op.InstanceTypeStore)
	clusterState := state.NewCluster(op.Clock, op.GetClient(), cloudProvider)
	op.
		WithControllers(ctx, controllers.NewControllers(
			ctx,
			op.Manager,
			op.Clock,
			op.GetClient(),
			op.EventRecorder,
			cloudProvider,
			undecorated,
			clusterState,
			op.InstanceTypeStore,
		)...).Start(ctx)
}
